# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034  # globals are read by scripts/broker
# PostgreSQL (Debian's postgresql package) on 127.0.0.1: a throwaway cluster
# made by initdb, TCP only, one superuser with a password, one database.
# Sourced by scripts/broker.
#
# PostgreSQL refuses to run as root. Started by root, the server runs as the
# package's "postgres" user, and its data directory lives where that user can
# reach it (BQ_POSTGRES_DATA_DIR, by default a directory under /var/tmp named
# after the port), because a root-owned state directory is usually not
# traversable by other users.

bq_postgres_setup() {
  bq_port_default BQ_POSTGRES_PORT 5442
  BQ_POSTGRES_USER="${BQ_POSTGRES_USER:-babelqueue}"
  BQ_POSTGRES_PASSWORD="${BQ_POSTGRES_PASSWORD:-babelqueue}"
  BQ_POSTGRES_DB="${BQ_POSTGRES_DB:-babelqueue}"
  bq_validate_port BQ_POSTGRES_PORT "$BQ_POSTGRES_PORT"
  local name
  for name in BQ_POSTGRES_USER BQ_POSTGRES_PASSWORD BQ_POSTGRES_DB; do
    [[ "${!name}" =~ ^[a-z][a-z0-9_]*$ ]] ||
      bq_die "$name may only use [a-z0-9_] and must start with a letter (got '${!name}')"
  done
  P_DIR="$(bq_state_dir postgres)"
  P_LOG="$P_DIR/postgres.log"
  P_PIDFILE="$P_DIR/postgres.pid"
  P_TIMEOUT="${BQ_START_TIMEOUT:-60}"
  if [[ ${EUID:-$(id -u)} -eq 0 ]]; then
    P_RUN_AS=postgres
    P_DATA="${BQ_POSTGRES_DATA_DIR:-/var/tmp/babelqueue-postgres-$BQ_POSTGRES_PORT}"
  else
    P_RUN_AS=""
    P_DATA="${BQ_POSTGRES_DATA_DIR:-$P_DIR/data}"
  fi
}

bq_postgres_logfile() { printf '%s\n' "$P_LOG"; }

bq_postgres_start_timeout() { printf '%s\n' "$P_TIMEOUT"; }

bq_postgres_url() {
  printf 'postgresql://%s:%s@127.0.0.1:%s/%s\n' "$BQ_POSTGRES_USER" "$BQ_POSTGRES_PASSWORD" \
    "$BQ_POSTGRES_PORT" "$BQ_POSTGRES_DB"
}

bq_postgres_ports() { printf '%s\n' "$BQ_POSTGRES_PORT"; }

# The newest server installed by Debian's postgresql package.
bq_postgres_bindir() {
  local dir
  dir="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)"
  [[ -n "$dir" && -x "$dir/postgres" ]] || return 1
  printf '%s\n' "$dir"
}

bq_postgres_install() {
  if ! bq_postgres_bindir >/dev/null || ! command -v pg_isready >/dev/null 2>&1; then
    BQ_JUST_INSTALLED=0
    bq_apt_install "$P_DIR/install.log" postgresql postgresql-client
    # The package starts a system cluster on 5432; ours does not need it.
    if (( BQ_JUST_INSTALLED )) && command -v pg_ctlcluster >/dev/null 2>&1; then
      bq_log "stopping the system PostgreSQL cluster the package started"
      bq_as_root service postgresql stop >/dev/null 2>&1 || true
    fi
  fi
  bq_postgres_bindir >/dev/null || bq_die "no PostgreSQL server under /usr/lib/postgresql after install"
}

bq_postgres_pid() { bq_pidfile_pid "$P_PIDFILE" "$P_DATA"; }

# Runs a PostgreSQL program as the user the server runs as.
bq_postgres_as_owner() {
  if [[ -n "$P_RUN_AS" ]]; then
    setpriv --reuid="$P_RUN_AS" --regid="$P_RUN_AS" --init-groups -- "$@"
  else
    "$@"
  fi
}

bq_postgres_probe() {
  pg_isready -q -h 127.0.0.1 -p "$BQ_POSTGRES_PORT" -d "$BQ_POSTGRES_DB" -U "$BQ_POSTGRES_USER" -t 2
}

# A new cluster: the superuser with its password (scram-sha-256 over TCP),
# and the database, created in single-user mode before the first start.
bq_postgres_initdb() {
  local bindir="$1" pwfile
  mkdir -p "$P_DATA"
  [[ -z "$P_RUN_AS" ]] || chown "$P_RUN_AS:" "$P_DATA"
  chmod 700 "$P_DATA"
  pwfile="$(mktemp)"
  printf '%s\n' "$BQ_POSTGRES_PASSWORD" >"$pwfile"
  [[ -z "$P_RUN_AS" ]] || chown "$P_RUN_AS:" "$pwfile"
  if ! bq_postgres_as_owner "$bindir/initdb" -D "$P_DATA" -U "$BQ_POSTGRES_USER" \
         --pwfile="$pwfile" --auth-host=scram-sha-256 --auth-local=peer \
         --encoding=UTF8 --locale=C.UTF-8 >>"$P_LOG" 2>&1; then
    rm -f "$pwfile"
    bq_die "initdb failed; see $P_LOG"
  fi
  rm -f "$pwfile"
  printf 'CREATE DATABASE %s;\n' "$BQ_POSTGRES_DB" |
    bq_postgres_as_owner "$bindir/postgres" --single -D "$P_DATA" -j postgres >>"$P_LOG" 2>&1 ||
    bq_die "could not create database $BQ_POSTGRES_DB; see $P_LOG"
}

bq_postgres_launch() {
  local bindir
  bindir="$(bq_postgres_bindir)"
  [[ -f "$P_DATA/PG_VERSION" ]] || bq_postgres_initdb "$bindir"
  # Settings on the command line, so a restart with other ports needs no edit.
  # fsync stays on: the outbox and idempotency tests kill processes, not the
  # machine, but a test database that lies about durability proves nothing.
  local as_owner=()
  [[ -z "$P_RUN_AS" ]] || as_owner=(setpriv --reuid="$P_RUN_AS" --regid="$P_RUN_AS" --init-groups --)
  bq_spawn "$P_DATA" "$P_PIDFILE" "$P_LOG" "${as_owner[@]}" \
    "$bindir/postgres" -D "$P_DATA" -c listen_addresses=127.0.0.1 -c port="$BQ_POSTGRES_PORT" \
    -c unix_socket_directories= -c max_connections=200 -c logging_collector=off
}

bq_postgres_loopback_pids() { bq_postgres_pid || true; }

bq_postgres_stop() {
  local pid
  pid="$(bq_postgres_pid)" || return 0
  # SIGINT is PostgreSQL's fast shutdown: clients are disconnected and the
  # server checkpoints (SIGTERM would wait for every client to leave).
  kill -INT "$pid" 2>/dev/null || true
  bq_wait_exit "$pid" "$BQ_STOP_TIMEOUT" || bq_terminate postgres "$pid" 10
  rm -f "$P_PIDFILE"
}

bq_postgres_info() {
  echo "url=$(bq_postgres_url)"
  echo "port=$BQ_POSTGRES_PORT"
  echo "user=$BQ_POSTGRES_USER"
  echo "database=$BQ_POSTGRES_DB"
  echo "dir=$P_DIR"
  echo "data=$P_DATA"
  echo "log=$P_LOG"
  echo "version=$("$(bq_postgres_bindir)/postgres" --version 2>/dev/null | awk '{print $3}')"
}

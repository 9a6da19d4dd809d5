# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034  # globals are read by scripts/broker
# Shared helpers for scripts/broker: logging, locations, package installs,
# detached process handling, readiness waiting, TLS material, Maven fetches.
# Sourced by scripts/broker; not meant to be executed on its own.

# ---------------------------------------------------------------------------
# Logging (everything except the final URL goes to stderr)
# ---------------------------------------------------------------------------
bq_log() { printf 'broker: %s\n' "$*" >&2; }
bq_die() { printf 'broker: error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# Locations
# ---------------------------------------------------------------------------
bq_abs_path() {
  # Absolute form of $1 (which need not exist yet).
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s/%s\n' "$PWD" "$1" ;;
  esac
}

bq_init_dirs() {
  local state_base cache_base
  if [[ -z "${HOME:-}" ]]; then
    HOME="$(getent passwd "$(id -u)" | cut -d: -f6)"
    [[ -n "$HOME" ]] || bq_die "HOME is not set"
    export HOME
  fi
  state_base="${BQ_BROKER_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/babelqueue/brokers}"
  cache_base="${XDG_CACHE_HOME:-$HOME/.cache}/babelqueue"
  bq_state_base="$(bq_abs_path "$state_base")"
  bq_cache_base="$(bq_abs_path "$cache_base")"
  BQ_START_TIMEOUT="${BQ_START_TIMEOUT:-}"
  BQ_STOP_TIMEOUT="${BQ_STOP_TIMEOUT:-60}"
}

# bq_port_default VARNAME DEFAULT: a broker's port keeps the value the
# environment gives VARNAME, else it is DEFAULT shifted by BQ_BROKER_PORT_OFFSET
# (0 unless set; the self-test runs a second set of brokers beside the usual
# ones with it). Ports derived from another port (port + 1) are not shifted
# again.
bq_port_default() {
  local offset="${BQ_BROKER_PORT_OFFSET:-0}"
  [[ "$offset" =~ ^[0-9]{1,5}$ ]] || bq_die "BQ_BROKER_PORT_OFFSET must be a number of ports, got '$offset'"
  [[ -n "${!1:-}" ]] || printf -v "$1" '%d' "$(( $2 + 10#$offset ))"
}

# State directory of one broker (created on demand, physical path).
bq_state_dir() {
  local dir="$bq_state_base/$1"
  mkdir -p "$dir"
  (cd "$dir" && pwd -P)
}

bq_validate_port() {
  # bq_validate_port VARNAME VALUE -- checks VALUE and stores it, in plain
  # decimal, in the variable VARNAME
  if ! [[ "$2" =~ ^[0-9]{1,5}$ ]] || (( 10#$2 < 1 || 10#$2 > 65535 )); then
    bq_die "$1 must be a TCP port number (1-65535), got '$2'"
  fi
  printf -v "$1" '%d' "$(( 10#$2 ))"
}

# ---------------------------------------------------------------------------
# Locks (serialise concurrent start/stop/install of the same thing)
# ---------------------------------------------------------------------------
bq_lock() {
  # bq_lock FILE FD  -- holds an exclusive lock on FILE through descriptor FD
  local file="$1" fd="$2"
  mkdir -p "$(dirname "$file")"
  eval "exec ${fd}>>\"\$file\""
  if ! flock -w 900 "$fd"; then
    bq_die "timed out waiting for lock $file"
  fi
}

# ---------------------------------------------------------------------------
# Privileges and Debian packages
# ---------------------------------------------------------------------------
bq_as_root() {
  if [[ ${EUID:-$(id -u)} -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    bq_die "need root (or sudo) to run: $*"
  fi
}

bq_deb_installed() {
  local status
  status="$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)"
  [[ "$status" == *"ok installed"* ]]
}

# bq_apt_install LOGFILE PKG...  -- installs the missing packages, quietly.
# Services that the packages would start are blocked (policy-rc.d exit 101)
# for the duration of the install, so no system-wide broker comes up.
bq_apt_install() {
  local logfile="$1"; shift
  local missing=() pkg
  for pkg in "$@"; do
    bq_deb_installed "$pkg" || missing+=("$pkg")
  done
  (( ${#missing[@]} )) || return 0
  command -v apt-get >/dev/null 2>&1 ||
    bq_die "missing packages (${missing[*]}) and no apt-get to install them"

  bq_log "installing Debian packages: ${missing[*]} (log: $logfile)"
  mkdir -p "$(dirname "$logfile")"
  local policy=/usr/sbin/policy-rc.d created_policy=0 rc=0
  if [[ ! -e "$policy" ]]; then
    bq_as_root sh -c "printf '#!/bin/sh\nexit 101\n' > '$policy' && chmod 755 '$policy'"
    created_policy=1
  fi
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y -qq
             -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef
             -o Dpkg::Options::=--force-confold install --no-install-recommends)
  if ! bq_as_root "${apt[@]}" "${missing[@]}" >>"$logfile" 2>&1; then
    bq_log "apt-get install failed; running apt-get update and retrying"
    if bq_as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq \
         -o DPkg::Lock::Timeout=600 update >>"$logfile" 2>&1; then
      bq_as_root "${apt[@]}" "${missing[@]}" >>"$logfile" 2>&1 || rc=$?
    else
      rc=$?
    fi
  fi
  if (( created_policy )); then
    bq_as_root rm -f "$policy"
  fi
  if (( rc != 0 )); then
    tail -n 30 "$logfile" >&2 || true
    bq_die "could not install Debian packages: ${missing[*]}"
  fi
  for pkg in "${missing[@]}"; do
    bq_deb_installed "$pkg" || bq_die "package $pkg still not installed (see $logfile)"
  done
  bq_log "installed: ${missing[*]}"
  BQ_JUST_INSTALLED=1
}

# Java 17 (with javac) and Maven, for the brokers fetched from Maven Central.
bq_ensure_java_maven() {
  local logfile="$1" need=()
  command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
  command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null 2>&1 || need+=(maven)
  (( ${#need[@]} )) || return 0
  bq_apt_install "$logfile" "${need[@]}"
}

bq_java_major() {
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}

bq_ensure_curl() {
  command -v curl >/dev/null 2>&1 || bq_apt_install "$1" curl
}

# ---------------------------------------------------------------------------
# Maven Central fetches: dependency:copy-dependencies on a generated pom.
# ---------------------------------------------------------------------------
# bq_mvn_fetch DEST LOGFILE DEPENDENCY_XML [MANAGED_XML]
# DEST/libs receives the jars; DEST/.complete marks a finished fetch, so a
# second call is instant. MANAGED_XML, when given, goes into the pom's
# <dependencyManagement> (a BOM imported there fixes the versions of
# dependencies that DEPENDENCY_XML names without one).
bq_mvn_fetch() {
  local dest="$1" logfile="$2" deps="$3" managed="${4:-}"
  [[ -f "$dest/.complete" && -d "$dest/libs" ]] && return 0
  mkdir -p "$dest"
  local work="$dest/.fetch.$$"
  rm -rf "$work"
  mkdir -p "$work"
  cat >"$work/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.babelqueue.brokers</groupId>
  <artifactId>$(basename "$dest")</artifactId>
  <version>1</version>
  <packaging>pom</packaging>${managed:+
  <dependencyManagement>
    <dependencies>
$managed
    </dependencies>
  </dependencyManagement>}
  <dependencies>
$deps
  </dependencies>
</project>
EOF
  bq_log "fetching $(basename "$dest") from Maven Central (log: $logfile)"
  if ! (cd "$work" && mvn -q -B -f pom.xml dependency:copy-dependencies \
          -DincludeScope=runtime -DoutputDirectory="$work/libs" >>"$logfile" 2>&1); then
    tail -n 30 "$logfile" >&2 || true
    rm -rf "$work"
    bq_die "Maven could not fetch $(basename "$dest")"
  fi
  rm -rf "$dest/libs"
  mv "$work/libs" "$dest/libs"
  mv "$work/pom.xml" "$dest/pom.xml"
  rm -rf "$work"
  date -u +%Y-%m-%dT%H:%M:%SZ >"$dest/.complete"
  bq_log "fetched $(find "$dest/libs" -type f | wc -l) files into $dest/libs"
}

# ---------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------
# True when something accepts TCP connections on 127.0.0.1:PORT.
bq_port_open() {
  # shellcheck disable=SC2016  # expanded by the inner shell
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# bq_pid_ours PID DIR: PID is alive and its working directory is inside DIR
# (every broker process is started inside its state directory, which guards
# against stale pid files that now name an unrelated process).
bq_pid_ours() {
  local pid="$1" dir="$2" cwd
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # An exited process that nobody has reaped yet is not running.
  if grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null; then
    return 1
  fi
  cwd="$(readlink "/proc/$pid/cwd" 2>/dev/null || true)"
  [[ -z "$cwd" ]] && return 0   # no /proc access: trust kill -0
  [[ "$cwd" == "$dir" || "$cwd" == "$dir"/* ]]
}

# bq_pidfile_pid PIDFILE DIR: prints the pid if the pid file names a live
# process of ours; removes a stale pid file otherwise.
bq_pidfile_pid() {
  local pidfile="$1" dir="$2" pid
  [[ -f "$pidfile" ]] || return 1
  pid="$(tr -dc '0-9' <"$pidfile" 2>/dev/null || true)"
  if bq_pid_ours "$pid" "$dir"; then
    printf '%s\n' "$pid"
    return 0
  fi
  rm -f "$pidfile"
  return 1
}

# bq_spawn DIR PIDFILE LOGFILE CMD...: runs CMD detached from the terminal
# (new session, stdin from /dev/null, output appended to LOGFILE) with DIR
# as working directory; PIDFILE receives the pid of CMD itself.
bq_spawn() {
  local dir="$1" pidfile="$2" logfile="$3"; shift 3
  rm -f "$pidfile"
  # Keep one previous log when the current one grows past 20 MB.
  if [[ -f "$logfile" ]] && (( $(stat -c %s "$logfile" 2>/dev/null || echo 0) > 20971520 )); then
    mv -f "$logfile" "$logfile.1"
  fi
  printf '\n===== %s starting: %s =====\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"$logfile"
  (
    cd "$dir"
    # Close every inherited descriptor above stderr (lock files, a caller's
    # pipes) so the long-lived broker holds none of them open.
    local fd
    for fd in /proc/self/fd/*; do
      fd="${fd##*/}"
      if (( fd > 2 )); then eval "exec ${fd}>&-" 2>/dev/null || true; fi
    done
    # shellcheck disable=SC2016  # expanded by the inner shell
    exec setsid nohup bash -c 'echo "$$" >"$1"; shift; exec "$@"' _ "$pidfile" "$@" \
      </dev/null >>"$logfile" 2>&1
  ) &
  local i
  for (( i = 0; i < 100; i++ )); do
    [[ -s "$pidfile" ]] && return 0
    sleep 0.05
  done
  bq_die "process did not start (no pid file $pidfile); see $logfile"
}

# bq_wait_exit PID SECONDS: waits for PID to exit; 1 on timeout.
bq_wait_exit() {
  local pid="$1" secs="$2" i
  for (( i = 0; i < secs * 10; i++ )); do
    kill -0 "$pid" 2>/dev/null || return 0
    # an exited process that nobody has reaped yet counts as gone
    grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# bq_terminate NAME PID SECONDS: TERM, wait, then KILL if needed.
bq_terminate() {
  local name="$1" pid="$2" secs="$3"
  kill -TERM "$pid" 2>/dev/null || return 0
  if ! bq_wait_exit "$pid" "$secs"; then
    bq_log "$name (pid $pid) did not exit within ${secs}s of SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    bq_wait_exit "$pid" 10 || bq_die "$name (pid $pid) does not exit"
  fi
}

# bq_fail NAME LOGFILE MESSAGE: error with the tail of the broker's log.
bq_fail() {
  local name="$1" logfile="$2"; shift 2
  printf 'broker: error: %s\n' "$*" >&2
  if [[ -f "$logfile" ]]; then
    printf 'broker: ---- last lines of %s ----\n' "$logfile" >&2
    tail -n 40 "$logfile" >&2 || true
    printf 'broker: ---- end of %s ----\n' "$logfile" >&2
  fi
  exit 1
}

# bq_wait_ready NAME TIMEOUT LOGFILE PIDFN PROBEFN: polls PROBEFN until it
# succeeds (0); returns 1 on timeout and 2 when the process behind PIDFN
# has exited.
bq_wait_ready() {
  local name="$1" secs="$2" logfile="$3" pidfn="$4" probefn="$5"
  local start=$SECONDS
  while :; do
    if "$probefn"; then
      bq_log "$name ready after $(( SECONDS - start ))s"
      return 0
    fi
    if ! "$pidfn" >/dev/null; then
      return 2
    fi
    if (( SECONDS - start >= secs )); then
      return 1
    fi
    sleep 0.3
  done
}

# Pids of the session led by PID (the broker and the helpers it forked).
bq_session_pids() {
  ps -eo pid=,sid= 2>/dev/null | awk -v s="$1" '$2 == s { print $1 }'
}

# bq_assert_loopback NAME PID...: every listening socket owned by the given
# pids must be bound to 127.0.0.1 (or its IPv4-mapped IPv6 form; epmd may
# also hold ::1, which it always adds itself). Prints the offending sockets
# and returns 1 otherwise.
bq_assert_loopback() {
  local name="$1"; shift
  command -v ss >/dev/null 2>&1 || { bq_log "ss not found; skipping the loopback-only check"; return 0; }
  local pids bad="" line addr pid
  pids="|$(printf '%s|' "$@")"
  while IFS= read -r line; do
    [[ -n "$line" ]] || continue
    addr="$(awk '{print $5}' <<<"$line")"  # Netid State Recv-Q Send-Q Local Peer Process
    while read -r pid; do
      [[ "$pids" == *"|$pid|"* ]] || continue
      case "$addr" in
        127.0.0.1:* | "[::ffff:127.0.0.1]:"*) ;;
        # epmd always adds the IPv6 loopback next to ERL_EPMD_ADDRESS
        "[::1]:"*) [[ "$line" == *'(("epmd",'* ]] || bad+="$line"$'\n' ;;
        *) bad+="$line"$'\n' ;;
      esac
    done < <(grep -o 'pid=[0-9]*' <<<"$line" | cut -d= -f2)
  done < <(ss -Hltnup 2>/dev/null)
  if [[ -n "$bad" ]]; then
    printf 'broker: error: %s listens on a non-loopback address:\n%s' "$name" "$bad" >&2
    return 1
  fi
  return 0
}

# ---------------------------------------------------------------------------
# TLS material: a private CA plus a server and a client certificate.
# ---------------------------------------------------------------------------
# bq_gen_tls DIR: creates DIR/{ca.crt,ca.key,server.crt,server.key,client.crt,
# client.key} once (server cert for localhost and 127.0.0.1). 127.0.0.1 is in
# the subject alternative names twice: as an IP address, which OpenSSL, Python
# and Go check, and as a DNS name, because qpid-proton's peer-name check (the
# AMQP 1.0 clients) compares the host with DNS names only, never with an IP
# address entry.
bq_gen_tls() {
  local dir="$1" f
  local all=(ca.crt ca.key server.crt server.key client.crt client.key)
  local have=1
  for f in "${all[@]}"; do [[ -s "$dir/$f" ]] || have=0; done
  (( have )) && return 0
  command -v openssl >/dev/null 2>&1 || bq_apt_install "$dir/../install.log" openssl
  mkdir -p "$dir"
  local tmp="$dir/.gen.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  (
    set -e
    cd "$tmp"
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 \
      -keyout ca.key -out ca.crt -subj "/O=babelqueue/CN=babelqueue test CA" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req -newkey rsa:2048 -nodes -sha256 -keyout server.key -out server.csr \
      -subj "/O=babelqueue/CN=localhost"
    printf '%s\n' "basicConstraints=CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=serverAuth" \
      "subjectAltName=DNS:localhost,DNS:127.0.0.1,IP:127.0.0.1" >server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
      -days 3650 -sha256 -extfile server.ext -out server.crt
    openssl req -newkey rsa:2048 -nodes -sha256 -keyout client.key -out client.csr \
      -subj "/O=babelqueue/CN=babelqueue-client"
    printf '%s\n' "basicConstraints=CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=clientAuth" >client.ext
    openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
      -days 3650 -sha256 -extfile client.ext -out client.crt
    chmod 644 ca.crt server.crt client.crt
    chmod 600 ca.key server.key client.key
    # (set -e does not apply inside an || list: check the results instead)
    for f in "${all[@]}"; do [[ -s "$f" ]] || exit 1; done
    openssl verify -CAfile ca.crt server.crt client.crt
  ) >"$tmp/openssl.log" 2>&1 || { cat "$tmp/openssl.log" >&2; rm -rf "$tmp"; bq_die "openssl failed to create TLS material in $dir"; }
  for f in "${all[@]}"; do mv -f "$tmp/$f" "$dir/$f"; done
  rm -rf "$tmp"
  bq_log "generated TLS CA, server and client certificates in $dir"
}

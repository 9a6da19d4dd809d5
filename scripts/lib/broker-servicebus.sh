# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034  # globals are read by scripts/broker
# The project's Azure Service Bus test server (tests/servicebus/server, Python
# on python-qpid-proton from PyPI, in a private venv) on 127.0.0.1: plain AMQP
# 1.0 as Microsoft's clients speak it to a development emulator
# (UseDevelopmentEmulator=true), SAS tokens checked against the key below.
# Sourced by scripts/broker.

bq_servicebus_setup() {
  bq_port_default BQ_SERVICEBUS_PORT 5694
  bq_validate_port BQ_SERVICEBUS_PORT "$BQ_SERVICEBUS_PORT"
  BQ_SERVICEBUS_KEY_NAME="${BQ_SERVICEBUS_KEY_NAME:-RootManageSharedAccessKey}"
  BQ_SERVICEBUS_KEY="${BQ_SERVICEBUS_KEY:-babelqueue-servicebus-test-key}"
  # Short, so that tests of lock expiry and renewal take seconds; the service's
  # (and the server's own) default is 30 s.
  BQ_SERVICEBUS_LOCK_DURATION="${BQ_SERVICEBUS_LOCK_DURATION:-5}"
  BQ_SERVICEBUS_MAX_DELIVERY_COUNT="${BQ_SERVICEBUS_MAX_DELIVERY_COUNT:-10}"
  BQ_SERVICEBUS_PROTON_VERSION="${BQ_SERVICEBUS_PROTON_VERSION:-0.40.0}"
  # The values end up in a connection string, where ';' and '=' separate fields.
  [[ "$BQ_SERVICEBUS_KEY_NAME" =~ ^[A-Za-z0-9._-]+$ ]] ||
    bq_die "BQ_SERVICEBUS_KEY_NAME may hold letters, digits, '.', '_' and '-' only (got '$BQ_SERVICEBUS_KEY_NAME')"
  [[ "$BQ_SERVICEBUS_KEY" =~ ^[A-Za-z0-9+/._-]+=*$ ]] ||
    bq_die "BQ_SERVICEBUS_KEY may hold base64 characters, '.', '_' and '-' only"
  [[ "$BQ_SERVICEBUS_LOCK_DURATION" =~ ^[0-9]+(\.[0-9]+)?$ && "$BQ_SERVICEBUS_LOCK_DURATION" != 0 ]] ||
    bq_die "BQ_SERVICEBUS_LOCK_DURATION must be a number of seconds above 0 (got '$BQ_SERVICEBUS_LOCK_DURATION')"
  [[ "$BQ_SERVICEBUS_MAX_DELIVERY_COUNT" =~ ^[1-9][0-9]*$ ]] ||
    bq_die "BQ_SERVICEBUS_MAX_DELIVERY_COUNT must be 1 or more (got '$BQ_SERVICEBUS_MAX_DELIVERY_COUNT')"
  [[ "$BQ_SERVICEBUS_PROTON_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
    bq_die "BQ_SERVICEBUS_PROTON_VERSION must look like 0.40.0 (got '$BQ_SERVICEBUS_PROTON_VERSION')"
  SB_SERVER="$(cd "$BQ_SCRIPT_DIR/../tests/servicebus/server" && pwd -P)"
  SB_HOME="$bq_cache_base/servicebus-server-proton-$BQ_SERVICEBUS_PROTON_VERSION"
  SB_PYTHON="$SB_HOME/venv/bin/python"
  SB_DIR="$(bq_state_dir servicebus)"
  SB_LOG="$SB_DIR/servicebus.log"
  SB_PIDFILE="$SB_DIR/servicebus.pid"
  SB_TIMEOUT="${BQ_START_TIMEOUT:-30}"
}

bq_servicebus_logfile() { printf '%s\n' "$SB_LOG"; }

bq_servicebus_start_timeout() { printf '%s\n' "$SB_TIMEOUT"; }

# The Python SDK's form: it takes the namespace from the URL and the
# credentials from AZURE_SERVICEBUS_CONNECTION_STRING (info prints it).
bq_servicebus_url() { printf 'sb://127.0.0.1:%s\n' "$BQ_SERVICEBUS_PORT"; }

bq_servicebus_connection_string() {
  printf 'Endpoint=sb://127.0.0.1:%s;SharedAccessKeyName=%s;SharedAccessKey=%s;UseDevelopmentEmulator=true\n' \
    "$BQ_SERVICEBUS_PORT" "$BQ_SERVICEBUS_KEY_NAME" "$BQ_SERVICEBUS_KEY"
}

bq_servicebus_ports() { printf '%s\n' "$BQ_SERVICEBUS_PORT"; }

bq_servicebus_install() {
  [[ -x "$SB_PYTHON" && -f "$SB_HOME/.complete" ]] && return 0
  bq_lock "$bq_cache_base/.servicebus-server.lock" 8
  if [[ ! -f "$SB_HOME/.complete" ]]; then
    local py
    py="$(command -v python3 || true)"
    [[ -n "$py" ]] || { bq_apt_install "$SB_DIR/install.log" python3 python3-venv; py="$(command -v python3)"; }
    if ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
      bq_apt_install "$SB_DIR/install.log" python3-venv
    fi
    bq_log "installing python-qpid-proton==$BQ_SERVICEBUS_PROTON_VERSION from PyPI into $SB_HOME/venv (log: $SB_DIR/install.log)"
    rm -rf "$SB_HOME"
    mkdir -p "$SB_HOME"
    if ! { "$py" -m venv "$SB_HOME/venv" &&
           "$SB_HOME/venv/bin/pip" install -q --disable-pip-version-check \
             "python-qpid-proton==$BQ_SERVICEBUS_PROTON_VERSION"; } >>"$SB_DIR/install.log" 2>&1; then
      tail -n 30 "$SB_DIR/install.log" >&2 || true
      rm -rf "$SB_HOME"
      bq_die "could not install python-qpid-proton==$BQ_SERVICEBUS_PROTON_VERSION"
    fi
    date -u +%Y-%m-%dT%H:%M:%SZ >"$SB_HOME/.complete"
  fi
  exec 8>&-
}

bq_servicebus_pid() { bq_pidfile_pid "$SB_PIDFILE" "$SB_DIR"; }

# A put-token on $cbs with a token signed by the namespace's key must be
# answered with status-code 202 (tests/servicebus/server/probe.py).
bq_servicebus_probe() {
  bq_port_open "$BQ_SERVICEBUS_PORT" || return 1
  SERVICEBUS_TEST_SERVER_KEY="$BQ_SERVICEBUS_KEY" timeout 15 "$SB_PYTHON" "$SB_SERVER/probe.py" \
    127.0.0.1 "$BQ_SERVICEBUS_PORT" "$BQ_SERVICEBUS_KEY_NAME" 2>/dev/null
}

bq_servicebus_launch() {
  # The key goes through the environment, not the command line.
  bq_spawn "$SB_DIR" "$SB_PIDFILE" "$SB_LOG" env SERVICEBUS_TEST_SERVER_KEY="$BQ_SERVICEBUS_KEY" \
    PYTHONUNBUFFERED=1 "$SB_PYTHON" "$SB_SERVER" --host 127.0.0.1 --port "$BQ_SERVICEBUS_PORT" \
    --key-name "$BQ_SERVICEBUS_KEY_NAME" --lock-duration "$BQ_SERVICEBUS_LOCK_DURATION" \
    --max-delivery-count "$BQ_SERVICEBUS_MAX_DELIVERY_COUNT"
}

bq_servicebus_loopback_pids() {
  local pid
  pid="$(bq_servicebus_pid)" || return 0
  bq_session_pids "$pid"
}

bq_servicebus_stop() {
  local pid
  pid="$(bq_servicebus_pid)" || return 0
  bq_terminate servicebus "$pid" "$BQ_STOP_TIMEOUT"
  rm -f "$SB_PIDFILE"
}

bq_servicebus_info() {
  echo "url=$(bq_servicebus_url)"
  echo "connection_string=$(bq_servicebus_connection_string)"
  echo "port=$BQ_SERVICEBUS_PORT"
  echo "key_name=$BQ_SERVICEBUS_KEY_NAME"
  echo "key=$BQ_SERVICEBUS_KEY"
  echo "lock_duration=$BQ_SERVICEBUS_LOCK_DURATION"
  echo "max_delivery_count=$BQ_SERVICEBUS_MAX_DELIVERY_COUNT"
  echo "dead_letter_queue=<queue>/\$DeadLetterQueue"
  echo "version=python-qpid-proton $BQ_SERVICEBUS_PROTON_VERSION"
  echo "server=$SB_SERVER"
  echo "python=$SB_PYTHON"
  echo "dir=$SB_DIR"
  echo "log=$SB_LOG"
}

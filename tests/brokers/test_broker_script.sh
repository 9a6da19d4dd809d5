#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2016  # single-quoted snippets are expanded by inner shells
# Self-checking test of scripts/broker.
#
#   tests/brokers/test_broker_script.sh [BROKER ...]
#
# For each broker (default: every one `scripts/broker list` prints): url ->
# start (URL is the only and last stdout line) -> status running ->
# loopback-only listeners -> the broker answers -> start again (idempotent,
# same pid) -> stop -> status stopped (exit 3) -> stop again. Redis and
# Artemis also check that data survives a stop/start, Redis, RabbitMQ,
# Artemis and Pulsar check their TLS port, Artemis that it listens on no
# other port and refuses a wrong password, the Service Bus test server that it
# listens on its one port, answers a put-token signed with its key and refuses
# one signed with another key, and that info prints its connection string, and
# Pulsar that its every socket is on 127.0.0.1 and that a start wipes the
# data. A broker this test has no specific checks for
# gets the generic ones: a URL on 127.0.0.1, its first port open.
#
# By default the test runs in isolation: its own temporary state directory
# and every broker's default ports shifted by BQ_TEST_PORT_OFFSET (default
# 1000, through scripts/broker's BQ_BROKER_PORT_OFFSET), so brokers that are
# already running with the default settings are not disturbed. Set
# BQ_TEST_ISOLATED=0 to test the default state directory and ports instead.
# Downloads are still cached in the usual cache directory.
#
# Last line of output: "N passed, N failed". Exit status 1 when any failed.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
BROKER="$HERE/../../scripts/broker"
mapfile -t ALL < <("$BROKER" list)

passed=0
failed=0
ok() { passed=$((passed + 1)); printf 'ok   - %s\n' "$*"; }
nok() { failed=$((failed + 1)); printf 'FAIL - %s\n' "$*"; }
check() {
  # check DESCRIPTION COMMAND...
  local desc="$1"; shift
  if "$@"; then ok "$desc"; else nok "$desc"; fi
}

names=("$@")
(( ${#names[@]} )) || names=("${ALL[@]}")
for n in "${names[@]}"; do
  case " ${ALL[*]} " in
    *" $n "*) ;;
    *) echo "unknown broker '$n' (expected: ${ALL[*]})" >&2; echo "0 passed, 1 failed"; exit 2 ;;
  esac
done

TMP="$(mktemp -d "${TMPDIR:-/tmp}/bq-broker-test.XXXXXX")"
started=()
cleanup() {
  local n
  for n in "${started[@]}"; do "$BROKER" stop "$n" >/dev/null 2>&1 || true; done
  if [[ "${BQ_TEST_KEEP:-0}" == 0 ]]; then
    rm -rf "$TMP"
  else
    echo "# kept $TMP"
  fi
}
trap cleanup EXIT

if [[ "${BQ_TEST_ISOLATED:-1}" != 0 ]]; then
  off="${BQ_TEST_PORT_OFFSET:-1000}"
  export BQ_BROKER_DIR="$TMP/state"
  # Ports given in the environment would not be shifted: every broker's
  # default ports are, instead.
  mapfile -t port_variables < <(compgen -v | grep -E '^BQ_[A-Z0-9_]+_PORT$' || true)
  (( ${#port_variables[@]} == 0 )) || unset "${port_variables[@]}"
  export BQ_BROKER_PORT_OFFSET="$off"
  echo "# isolated run: state in $BQ_BROKER_DIR, ports shifted by $off"
fi

# expected URL shape for a broker, given its port
url_regex() {
  case "$1" in
    redis) echo '^redis://127\.0\.0\.1:[0-9]+/0$' ;;
    rabbitmq) echo '^amqp://guest:guest@127\.0\.0\.1:[0-9]+/(%2F)?$' ;;
    kafka) echo '^kafka://127\.0\.0\.1:[0-9]+$' ;;
    sqs) echo '^sqs://us-east-1\?endpoint=http://127\.0\.0\.1:[0-9]+$' ;;
    artemis) echo '^artemis://admin:admin@127\.0\.0\.1:[0-9]+$' ;;
    servicebus) echo '^sb://127\.0\.0\.1:[0-9]+$' ;;
    pulsar) echo '^pulsar://127\.0\.0\.1:[0-9]+$' ;;
    *) echo '^[a-z0-9+]+://.*127\.0\.0\.1:[0-9]+' ;;
  esac
}

url_port() {
  local u="$1"
  u="${u##*127.0.0.1:}"
  printf '%s\n' "${u%%[!0-9]*}"
}

port_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null; }

# All listening sockets on PORT are bound to 127.0.0.1.
loopback_only() {
  local port="$1" lines
  command -v ss >/dev/null 2>&1 || return 0
  lines="$(ss -Hltn "sport = :$port" 2>/dev/null | awk '{print $4}')"
  [[ -n "$lines" ]] || return 1
  ! grep -v -E '^(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]):' <<<"$lines" | grep -q .
}

# The broker speaks its protocol on the port.
answers() {
  local name="$1" port="$2"
  case "$name" in
    redis)
      [[ "$(timeout 5 redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" == PONG ]] ;;
    rabbitmq)
      timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "AMQP\x00\x00\x09\x01" >&3
        [[ "$(head -c 1 <&3 | od -An -tu1 | tr -d " \n")" == 1 ]]' _ "$port" ;;
    kafka)
      port_open "$port" ;;
    artemis)
      # AMQP 1.0: the SASL protocol header is answered by the same header,
      # then a sasl-mechanisms frame (SASL frame type 1, descriptor 0x40).
      timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "AMQP\x03\x01\x00\x00" >&3
        reply="$(head -c 19 <&3 | od -An -tx1 | tr -d " \n")"
        [[ "$reply" == 414d515003010000????????02010000005340 ]]' _ "$port" ;;
    pulsar)
      # The binary protocol: a CONNECT frame is answered by CONNECTED (type 3).
      timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "\x00\x00\x00\x0f\x00\x00\x00\x0b\x08\x02\x12\x07\x0a\x03bqt\x20\x0f" >&3
        reply="$(head -c 10 <&3 | od -An -tx1 | tr -d " \n")"
        [[ "$reply" == ????????????????0803 ]]' _ "$port" ;;
    sqs)
      curl -s --max-time 5 -X POST "http://127.0.0.1:$port/" \
        -H 'Content-Type: application/x-amz-json-1.0' -H 'X-Amz-Target: AmazonSQS.ListQueues' \
        -H 'Authorization: AWS4-HMAC-SHA256 Credential=test/20240101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0' \
        -d '{}' | grep -q '^{' ;;
    servicebus)
      servicebus_put_token "$port" "$(info_value servicebus key)" ;;
    postgres)
      # The URL's user, password and database log in over TCP.
      [[ "$(timeout 5 psql "$("$BROKER" url postgres)" -Atc 'select 1' 2>/dev/null)" == 1 ]] ;;
    *)
      port_open "$port" ;;
  esac
}

tls_handshake() {
  local port="$1" ca="$2"
  timeout 10 openssl s_client -connect "127.0.0.1:$port" -CAfile "$ca" \
    -verify_return_error -brief </dev/null >/dev/null 2>&1
}

info_value() { "$BROKER" info "$1" 2>/dev/null | sed -n "s/^$2=//p"; }

# The Artemis CLI of the broker's instance, against its port, as its user.
artemis_cli() {
  local command="$1"; shift
  timeout 60 "$(info_value artemis artemis)" "$command" --url "$(info_value artemis cli_url)" \
    --user "$(info_value artemis user)" --password "$(info_value artemis password)" "$@" >/dev/null 2>&1
}

# artemis_queue_count QUEUE N: the queue holds N messages.
artemis_queue_count() {
  local out
  out="$(timeout 60 "$(info_value artemis artemis)" queue stat --url "$(info_value artemis cli_url)" \
    --user "$(info_value artemis user)" --password "$(info_value artemis password)" --queueName "$1" 2>/dev/null)"
  awk -F'|' -v q="$1" '{ gsub(/ /, "", $2); gsub(/ /, "", $5) } $2 == q { print $5 }' <<<"$out" | grep -qx "$2"
}

# servicebus_put_token PORT KEY: a put-token on $cbs, signed with KEY, is
# answered with status-code 202 (the readiness probe, a real AMQP exchange).
servicebus_put_token() {
  SERVICEBUS_TEST_SERVER_KEY="$2" timeout 15 "$(info_value servicebus python)" \
    "$(info_value servicebus server)/probe.py" 127.0.0.1 "$1" "$(info_value servicebus key_name)" 2>/dev/null
}

servicebus_refuses() {
  local out
  out="$(SERVICEBUS_TEST_SERVER_KEY="$2" timeout 15 "$(info_value servicebus python)" \
    "$(info_value servicebus server)/probe.py" 127.0.0.1 "$1" "$(info_value servicebus key_name)" 2>&1)" && return 1
  grep -q 'answered status-code 401' <<<"$out"
}

status_pid() { sed -n 's/.*(pid \([0-9]*\)).*/\1/p' <<<"$1"; }

test_broker() {
  local name="$1" url out rc lines status pid pid2 port t0 t1
  echo "# --- $name ---"

  url="$("$BROKER" url "$name" 2>/dev/null)"; rc=$?
  check "$name: url exits 0" test "$rc" -eq 0
  check "$name: url has the expected form ($url)" grep -Eq "$(url_regex "$name")" <<<"$url"
  port="$(url_port "$url")"

  "$BROKER" stop "$name" >/dev/null 2>&1   # start from a stopped broker

  t0=$SECONDS
  out="$("$BROKER" start "$name" 2>"$TMP/$name.start.err")"; rc=$?
  t1=$SECONDS
  started+=("$name")
  check "$name: start exits 0 (took $((t1 - t0))s)" test "$rc" -eq 0
  if (( rc != 0 )); then
    sed 's/^/#   /' "$TMP/$name.start.err" | tail -n 40
    return
  fi
  lines="$(grep -c . <<<"$out")"
  check "$name: start prints only the URL on stdout ($lines line(s))" test "$lines" -eq 1
  check "$name: last stdout line of start is the URL" test "$(tail -n 1 <<<"$out")" = "$url"

  status="$("$BROKER" status "$name" 2>/dev/null)"; rc=$?
  check "$name: status exits 0 when running" test "$rc" -eq 0
  check "$name: status says running with the URL ($status)" grep -q "running.*$url" <<<"$status"
  pid="$(status_pid "$status")"

  check "$name: port $port listens on 127.0.0.1 only" loopback_only "$port"
  check "$name: answers on port $port" answers "$name" "$port"

  case "$name" in
    redis|rabbitmq|artemis|pulsar)
      local tls_port ca
      tls_port="$(info_value "$name" tls_port)"
      ca="$(info_value "$name" tls_ca)"
      if [[ -n "$tls_port" && "$tls_port" != 0 ]]; then
        check "$name: TLS port $tls_port listens on 127.0.0.1 only" loopback_only "$tls_port"
        check "$name: TLS handshake on $tls_port verifies against $ca" tls_handshake "$tls_port" "$ca"
      fi
      ;;
  esac
  if [[ "$name" == redis ]]; then
    check "redis: write a key" test "$(timeout 5 redis-cli -p "$port" set bq:test:persist yes 2>/dev/null)" = OK
  fi
  if [[ "$name" == pulsar ]]; then
    local admin
    admin="$(info_value pulsar admin_url)"
    check "pulsar: admin health answers ok" test "$(curl -s --max-time 10 "$admin/admin/v2/brokers/health")" = ok
    check "pulsar: the admin port listens on 127.0.0.1 only" loopback_only "$(info_value pulsar http_port)"
    check "pulsar: every socket of the broker is on 127.0.0.1" bash -c '
      ! ss -Hltnup 2>/dev/null | grep "pid=$1," | awk "{print \$5}" | grep -v -E "^(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]):" | grep -q .' _ "$pid"
    check "pulsar: create a topic" curl -s --fail --max-time 10 -X PUT "$admin/admin/v2/persistent/public/default/bq-test-wipe"
    check "pulsar: the topic is listed" bash -c '
      curl -s --max-time 10 "$1/admin/v2/persistent/public/default" | grep -q bq-test-wipe' _ "$admin"
  fi
  if [[ "$name" == artemis ]]; then
    local tls_port expected listening
    tls_port="$(info_value artemis tls_port)"
    expected="$(printf '%s\n' "$port" "$tls_port" | grep -v '^0$' | sort -n | tr '\n' ' ')"
    listening="$(ss -Hltnup 2>/dev/null | grep "pid=$pid," | awk '{print $5}' | sed 's/.*://' | sort -un | tr '\n' ' ')"
    check "artemis: the broker listens on its ports only ($listening)" test "$listening" = "$expected"
    check "artemis: a wrong password is refused" bash -c '! python3 "$1" 127.0.0.1 "$2" --user admin --password wrong 2>/dev/null' \
      _ "$HERE/../../scripts/lib/broker-artemis-probe.py" "$port"
    check "artemis: send a durable message" artemis_cli producer --destination queue://bq.test.persist \
      --message-count 1
  fi

  if [[ "$name" == servicebus ]]; then
    local listening cs
    listening="$(ss -Hltnup 2>/dev/null | grep "pid=$pid," | awk '{print $5}' | sed 's/.*://' | sort -un | tr '\n' ' ')"
    check "servicebus: the server listens on its port only ($listening)" test "$listening" = "$port "
    check "servicebus: a token signed with another key is refused with status-code 401" \
      servicebus_refuses "$port" not-the-key
    cs="$(info_value servicebus connection_string)"
    check "servicebus: info prints the connection string ($cs)" test "$cs" = \
      "Endpoint=sb://127.0.0.1:$port;SharedAccessKeyName=$(info_value servicebus key_name);SharedAccessKey=$(info_value servicebus key);UseDevelopmentEmulator=true"
    check "servicebus: info prints the lock duration and MaxDeliveryCount" \
      test -n "$(info_value servicebus lock_duration)" -a -n "$(info_value servicebus max_delivery_count)"
  fi

  t0=$SECONDS
  out="$("$BROKER" start "$name" 2>/dev/null)"; rc=$?
  t1=$SECONDS
  check "$name: second start exits 0 (took $((t1 - t0))s)" test "$rc" -eq 0
  check "$name: second start prints the same URL last" test "$(tail -n 1 <<<"$out")" = "$url"
  pid2="$(status_pid "$("$BROKER" status "$name" 2>/dev/null)")"
  check "$name: second start kept the same process (pid $pid)" test -n "$pid" -a "$pid" = "$pid2"

  "$BROKER" stop "$name" >/dev/null 2>"$TMP/$name.stop.err"; rc=$?
  check "$name: stop exits 0" test "$rc" -eq 0
  status="$("$BROKER" status "$name" 2>/dev/null)"; rc=$?
  check "$name: status exits 3 after stop" test "$rc" -eq 3
  check "$name: status says stopped ($status)" grep -q 'stopped' <<<"$status"
  check "$name: port $port is closed after stop" bash -c '! timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null' _ "$port"
  check "$name: process $pid is gone" bash -c '! kill -0 "$1" 2>/dev/null || grep -q "^State:[[:space:]]*Z" "/proc/$1/status"' _ "$pid"
  "$BROKER" stop "$name" >/dev/null 2>&1; rc=$?
  check "$name: stop when already stopped exits 0" test "$rc" -eq 0

  if [[ "$name" == redis ]]; then
    out="$("$BROKER" start redis 2>/dev/null)"; rc=$?
    check "redis: restart after stop exits 0" test "$rc" -eq 0
    check "redis: data survived stop/start (AOF)" test "$(timeout 5 redis-cli -p "$port" get bq:test:persist 2>/dev/null)" = yes
    "$BROKER" stop redis >/dev/null 2>&1
  fi
  if [[ "$name" == artemis ]]; then
    out="$("$BROKER" start artemis 2>/dev/null)"; rc=$?
    check "artemis: restart after stop exits 0" test "$rc" -eq 0
    check "artemis: the durable message survived stop/start" artemis_queue_count bq.test.persist 1
    "$BROKER" stop artemis >/dev/null 2>&1
  fi
  if [[ "$name" == pulsar ]]; then
    out="$("$BROKER" start pulsar 2>/dev/null)"; rc=$?
    check "pulsar: restart after stop exits 0" test "$rc" -eq 0
    check "pulsar: a start wipes the data (the topic is gone)" bash -c '
      ! curl -s --max-time 10 "$1/admin/v2/persistent/public/default" | grep -q bq-test-wipe' _ "$(info_value pulsar admin_url)"
    "$BROKER" stop pulsar >/dev/null 2>&1
  fi
  if [[ "$name" == rabbitmq ]]; then
    local epmd_port
    epmd_port="$(info_value rabbitmq epmd_port)"
    check "rabbitmq: private epmd (port $epmd_port) stopped too" bash -c '! timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null' _ "$epmd_port"
  fi
}

for n in "${names[@]}"; do
  test_broker "$n"
done

echo "$passed passed, $failed failed"
(( failed == 0 ))

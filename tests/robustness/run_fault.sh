#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One network fault on one broker (docs/reliability.md): producers and
# consumers reach the broker that scripts/broker runs through the fault proxy,
# which cuts, stalls, slows or refuses their connections for 2.5 s mid-run.
# Every meta.id must be consumed, every consumer must resume by itself within
# its reconnect policy, and no transport call may take longer than its
# documented timeouts allow.
#   run_fault.sh SOURCE_DIR AGENT BROKER FAULT [robustness.py options...]
# BROKER: redis, rabbitmq, kafka, sqs, artemis, servicebus or pulsar; FAULT: cut, stall, trickle or refuse.
#
# Each broker's URL shortens the timeouts that bound a call and the detection
# of a dead connection, so a run takes seconds; --call-bound and
# --resume-within are those timeouts added up (the comments say how).
set -euo pipefail
source_dir="$1"
agent="$2"
broker_name="$3"
fault="$4"
shift 4
broker="$source_dir/scripts/broker"
info="$("$broker" info "$broker_name")"
port="$(sed -n 's/^port=//p' <<<"$info" | head -n 1)"
url="$("$broker" url "$broker_name" | tail -n 1)"
[[ "$url" == *"127.0.0.1:$port"* ]] || { echo "run_fault.sh: $url does not name port $port" >&2; exit 2; }
proxied="${url/127.0.0.1:$port/\{proxy\}}"
extra=()
case "$broker_name" in
  redis)
    # A call: one connect (connect_timeout 1 s) and one command
    # (command_timeout 1 s, a blocking receive's wait on top) = 2 s. A
    # consumer resumes after its stalled receive times out (1 s beyond its
    # 0.5 s wait) and a reconnect (reconnect_max 0.5 s), or at once.
    proxied+="?visibility_timeout=2&connect_timeout=1s&command_timeout=1s&reconnect_max=500ms"
    extra=(--call-bound 2.5 --resume-within 5)
    ;;
  rabbitmq)
    # A publish waits for its confirm up to publish_timeout (3 s); a dead
    # connection is noticed after two missed heartbeats (2 x 1 s), then
    # reconnected (connect_timeout 1 s, reconnect_max 0.5 s).
    proxied+="?heartbeat=1&connect_timeout=1s&publish_timeout=3s&reconnect_max=500ms"
    extra=(--call-bound 3.5 --resume-within 6)
    ;;
  sqs)
    # One HTTP request may take request_timeout (1 s, the least allowed), a
    # long poll's wait on top; the Worker's next receive is its reconnect.
    proxied+="&create=1&request_timeout=1s&visibility_timeout=3"
    # The emulator takes any credentials.
    export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
    extra=(--call-bound 2.5 --resume-within 5)
    ;;
  artemis)
    # A publish waits for the broker's disposition up to publish_timeout
    # (3 s); a dead connection is noticed after two missed heartbeats (2 x
    # idle_timeout 1 s), then reconnected (connect_timeout 1 s, reconnect_max
    # 0.5 s), and the unsettled messages come back from the broker.
    proxied+="?idle_timeout=1s&connect_timeout=1s&publish_timeout=3s&reconnect_max=500ms"
    extra=(--call-bound 3.5 --resume-within 6)
    ;;
  servicebus)
    # The connection string names the server's own endpoint (the namespace:
    # AMQP hostname and token audience); the URL's port, the proxy's, is
    # where the TCP connection goes (docs/transports/servicebus.md). A send,
    # a settlement or a lock renewal waits for the server's answer up to
    # operation_timeout (3 s); a dead connection is noticed after two missed
    # heartbeats (2 x idle_timeout 1 s), then reconnected (connect_timeout
    # 1 s, reconnect_max 0.5 s). A lock held by a lost connection comes back
    # after the server's lock duration.
    AZURE_SERVICEBUS_CONNECTION_STRING="$(sed -n 's/^connection_string=//p' <<<"$info")"
    export AZURE_SERVICEBUS_CONNECTION_STRING
    lock="$(sed -n 's/^lock_duration=//p' <<<"$info")"
    proxied+="?lock_duration=${lock}s&idle_timeout=1s&connect_timeout=1s&operation_timeout=3s&reconnect_max=500ms"
    extra=(--call-bound 3.5 --resume-within 6)
    ;;
  pulsar)
    # A topic lookup answers with the address of the listener the client
    # names: the broker's second listener, fault, advertises the proxy's
    # fixed port (scripts/lib/broker-pulsar.sh), so after the lookup the
    # client still goes through the proxy. Checked here through the admin
    # API's lookup of the same listener.
    fault_port="$(sed -n 's/^fault_proxy_port=//p' <<<"$info")"
    listener="$(sed -n 's/^fault_listener_name=//p' <<<"$info")"
    admin="$(sed -n 's/^admin_url=//p' <<<"$info")"
    [[ -n "$fault_port" && -n "$listener" ]] || { echo "run_fault.sh: no fault listener in 'broker info pulsar'" >&2; exit 2; }
    answer="$(curl -s --max-time 10 "$admin/lookup/v2/topic/persistent/public/default/fault-check?listenerName=$listener")"
    [[ "$answer" == *"\"brokerUrl\":\"pulsar://127.0.0.1:$fault_port\""* ]] ||
      { echo "run_fault.sh: the $listener listener does not advertise the proxy's port $fault_port: $answer" >&2; exit 2; }
    # A publish waits for its receipts up to publish_timeout (3 s); a dead
    # connection is dropped after two silent keepalive periods (2 x 1 s),
    # then reconnected (connect_timeout 1 s, reconnect_max 0.5 s) and the
    # consumer subscribed again (operation_timeout 2 s); the messages the
    # lost connection held come back from the broker.
    proxied+="?listener_name=$listener&keepalive=1s&connect_timeout=1s&operation_timeout=2s&publish_timeout=3s&reconnect_max=500ms"
    extra=(--fault-port "$fault_port" --call-bound 3.5 --resume-within 6)
    ;;
  kafka)
    # The proxy must be the address the broker advertises, or the client
    # would go around it after bootstrapping: the broker's FAULT listener
    # advertises the proxy's fixed port (scripts/lib/broker-kafka.sh).
    fault_port="$(sed -n 's/^fault_proxy_port=//p' <<<"$info")"
    listener_port="$(sed -n 's/^fault_listener_port=//p' <<<"$info")"
    [[ -n "$fault_port" && -n "$listener_port" ]] || { echo "run_fault.sh: no fault listener in 'broker info kafka'" >&2; exit 2; }
    port="$listener_port"
    # A publish waits publish_timeout (5 s) plus, for a request in flight,
    # request_timeout (2 s). A silent connection is given up after
    # request_timeout; a consumer whose session ended meanwhile rejoins its
    # group (session_timeout 6 s) and the partitions are shared again, so
    # the run produces for 10 s, long after the fault.
    proxied="kafka://{proxy}?partitions=2&session_timeout=6s&publish_timeout=5s&request_timeout=2s&connect_timeout=2s&reconnect_max=500ms"
    extra=(--fault-port "$fault_port" --messages 6000 --call-bound 7.5 --resume-within 10)
    if [[ "$fault" == stall ]]; then
      # A JoinGroup in flight when the link stalls is not bounded by
      # request_timeout: librdkafka gives it max.poll.interval.ms + 3 s
      # (300 s + 3 s by default). With 6 s (the least it takes beside a 6 s
      # session) the stalled join is given up after 9 s; the group then
      # waits up to the same 6 s for the other member to rejoin: 15 s from
      # the join, plus a reconnect. The run produces for 20 s, so that a
      # consumer that gets its partition that late still finds work.
      proxied+="&consumer.max.poll.interval.ms=6000"
      extra=(--fault-port "$fault_port" --messages 12000 --call-bound 7.5 --resume-within 16)
    fi
    ;;
  *)
    echo "run_fault.sh: unknown broker $broker_name" >&2
    exit 2
    ;;
esac
exec python3 "$source_dir/tests/robustness/robustness.py" --agent "$agent" \
  --url "$proxied" --fault "$fault" --fault-target "127.0.0.1:$port" --fault-after 1.5 --fault-seconds 2.5 \
  --messages 3000 --producers 2 --workers 2 --concurrency 2 --prefetch 8 \
  --rate 600 --batch 10 --work-ms 2 --kills 0 --timeout 60 --drain-grace 8 \
  "${extra[@]}" "$@"

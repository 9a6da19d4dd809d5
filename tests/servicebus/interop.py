# SPDX-License-Identifier: Apache-2.0
"""The Python side of the Service Bus interop test (interop.sh), run with the
pinned published SDK (scripts/python-sdk run) against the Service Bus test
server. The SDK takes the namespace from the URL and the credentials from
AZURE_SERVICEBUS_CONNECTION_STRING, which interop.sh exports. Subcommands:

  produce URL QUEUE COUNT URN OUT   publish COUNT envelopes through the SDK's
                                    AsbTransport; bodies to OUT
  inspect URL QUEUE COUNT OUT       peek the queue with Microsoft's client
                                    (nothing locked or consumed) and check each
                                    message's fields against the Python SDK's
                                    own projection of its body; records to OUT
  handle URL QUEUE COUNT            run the Python runtime (BabelQueue.consume)
                                    over the queue: every i of 0..COUNT-1
                                    handled exactly once
  flaky URL QUEUE FAILURES OUT      the Python runtime on one message whose
                                    handler fails FAILURES times, then
                                    succeeds (max_attempts FAILURES + 1): it
                                    retries by republishing; the attempts
                                    each call saw to OUT
  fail-once URL QUEUE               the Python runtime fails one message once
                                    (max_attempts 3) and stops: its retry copy
                                    is left on the queue
  dead-letter URL QUEUE PRODUCED RETRY
                                    read QUEUE.dlq with the SDK's transport: the
                                    record of the message in PRODUCED that the
                                    C++ Worker dead-lettered (RETRY: its report)
  abandons URL QUEUE TIMES          pop the one message with the SDK's transport
                                    and abandon it, TIMES times: prints the
                                    header delivery-count and the attempts the
                                    SDK reads on each delivery
  compare SENT RECEIVED             the bodies sent equal the bodies received
  compare-retry ORIGINAL RETRIED    the retry copy is the original with
                                    attempts 1, byte for byte
"""
import json
import os
import sys

SPAN = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def load(path):
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def transport_for(url):
    from babelqueue.asb_transport import AsbTransport

    return AsbTransport(url)


def produce(url, queue, count, urn, out_path):
    from babelqueue.codec import EnvelopeCodec

    transport = transport_for(url)
    with open(out_path, "w", encoding="utf-8") as out:
        for i in range(count):
            envelope = EnvelopeCodec.make(urn, {"i": i, "text": "h\u00e9llo \u4e2d\u6587 \"q\" \\", "x": 0.1},
                                          queue=queue)
            body = EnvelopeCodec.encode(envelope)
            transport.publish(queue, body)
            out.write(json.dumps({"body": body}) + "\n")
    transport.close()


def inspect(url, queue, count, out_path):
    from azure.servicebus import ServiceBusClient

    from babelqueue.asb_transport import AsbTransport
    from babelqueue.codec import EnvelopeCodec

    client = ServiceBusClient.from_connection_string(os.environ["AZURE_SERVICEBUS_CONNECTION_STRING"])
    with client.get_queue_receiver(queue) as receiver:
        peeked = []
        while len(peeked) < count:
            batch = receiver.peek_messages(max_message_count=count - len(peeked),
                                           sequence_number=(peeked[-1].sequence_number + 1) if peeked else 0)
            if not batch:
                break
            peeked.extend(batch)
    client.close()
    if len(peeked) != count:
        raise SystemExit(f"{len(peeked)} messages on the queue, expected {count}")
    records = []
    problems = []
    for message in peeked:
        if message.body_type.value != "data":
            problems.append(f"the body is an AMQP {message.body_type.value} section, not data")
        body = b"".join(message.body).decode("utf-8")
        envelope = EnvelopeCodec.decode(body)
        if EnvelopeCodec.encode(envelope) != body:
            problems.append("the Python codec does not re-encode the body to the same bytes: " + body)
        # What the Python SDK itself would project for this body...
        want = AsbTransport._projection(body)
        for field in ("subject", "correlation_id", "message_id", "content_type"):
            if getattr(message, field) != want.get(field):
                problems.append(f"{field} {getattr(message, field)!r}, the Python projection {want.get(field)!r}")
        got_properties = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
                          for k, v in (message.application_properties or {}).items()}
        want_properties = dict(want.get("application_properties") or {})
        want_properties["traceparent"] = SPAN
        if got_properties != want_properties:
            problems.append(f"application properties {got_properties}, the Python projection {want_properties}")
        for name in ("bq-schema-version", "bq-created-at"):
            if type(got_properties.get(name)) is not int:
                problems.append(f"{name} is a {type(got_properties.get(name)).__name__}, not a number")
        if AsbTransport._unsupported_schema_version(message.application_properties) is not None:
            problems.append("the Python SDK's schema-version gate refuses the message")
        if message.delivery_count != 0:
            problems.append(f"a first delivery with delivery-count {message.delivery_count}")
        records.append({"body": body, "properties": got_properties})
    if problems:
        raise SystemExit("; ".join(sorted(set(problems))))
    with open(out_path, "w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    print(f"{count} messages carry the Python projection")


def handle(url, queue, count):
    from babelqueue import BabelQueue

    app = BabelQueue(url, queue=queue)
    handled = []
    app.register("urn:interop:cpp", lambda data, meta: handled.append(data["i"]))
    app.consume(queue, max_messages=count, timeout=10, handle_signals=False)
    app.transport.close()
    if sorted(handled) != list(range(count)):
        raise SystemExit(f"the Python runtime handled {sorted(handled)}")
    print(f"the Python runtime handled {count} messages")


def flaky(url, queue, failures, out_path):
    from babelqueue import BabelQueue

    app = BabelQueue(url, queue=queue, max_attempts=failures + 1)
    seen = []

    def handler(data, meta, envelope):
        seen.append(envelope["attempts"])
        if len(seen) <= failures:
            raise RuntimeError("the interop handler fails this attempt")

    app.register("urn:interop:cpp", handler)
    app.consume(queue, max_messages=failures + 1, timeout=10, handle_signals=False)
    app.transport.close()
    with open(out_path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"attempts": seen}) + "\n")
    print("attempts " + " ".join(str(a) for a in seen))


def fail_once(url, queue):
    from babelqueue import BabelQueue

    app = BabelQueue(url, queue=queue, max_attempts=3)

    def handler(data, meta):
        raise RuntimeError("the interop handler fails")

    app.register("urn:interop:cpp", handler)
    app.consume(queue, max_messages=1, timeout=10, handle_signals=False)
    app.transport.close()


def dead_letter(url, queue, produced_path, retry_path):
    from babelqueue.codec import EnvelopeCodec

    produced = load(produced_path)[0]["body"]
    report = load(retry_path)[0]
    problems = []
    if report["dead_letter_queue"] != queue + ".dlq":
        problems.append(f"the C++ dead-letter queue is {report['dead_letter_queue']!r}")
    if report["released_at"] != 0 or report["handler_attempts"] != [1, 2]:
        problems.append(f"the C++ side saw attempts {report['released_at']} then {report['handler_attempts']}")
    if report["retried"] != 1 or report["dead_lettered"] != 1:
        problems.append(f"the C++ Worker retried {report['retried']}, dead-lettered {report['dead_lettered']}")
    transport = transport_for(url)
    received = transport.pop(queue + ".dlq", timeout=20)
    if received is None:
        raise SystemExit("nothing on " + queue + ".dlq")
    transport.ack(received)
    transport.close()
    record = EnvelopeCodec.decode(received.body)
    original = EnvelopeCodec.decode(produced)
    block = record.get("dead_letter") or {}
    for key in ("job", "trace_id", "data", "meta"):
        if record.get(key) != original.get(key):
            problems.append(f"{key} changed: {record.get(key)!r} != {original.get(key)!r}")
    if record.get("attempts") != 3:
        problems.append(f"the dead-letter record has attempts {record.get('attempts')}")
    expected = {"reason": "failed", "original_queue": queue, "attempts": 3, "lang": "cpp"}
    if {k: block.get(k) for k in expected} != expected:
        problems.append(f"dead_letter block {block}")
    if "always fails" not in str(block.get("error")):
        problems.append(f"dead_letter.error {block.get('error')!r}")
    if problems:
        raise SystemExit("; ".join(problems))
    print("the Python SDK reads the C++ dead-letter record")


def abandons(url, queue, times):
    transport = transport_for(url)
    headers, readings = [], []
    for _ in range(times):
        received = transport.pop(queue, timeout=20)
        if received is None:
            raise SystemExit(f"nothing on {queue} after {len(headers)} abandons")
        headers.append(received.handle.delivery_count)
        readings.append(json.loads(received.body)["attempts"])
        transport.abandon(received)
    transport.close()
    print(f"header delivery-count {headers}, the Python SDK reads attempts {readings}")


def compare(sent_path, received_path):
    sent = sorted(r["body"] for r in load(sent_path))
    received = load(received_path)
    if sent != sorted(r["body"] for r in received):
        raise SystemExit(f"bodies differ: sent {len(sent)}, received {len(received)}")
    for record in received:
        if record.get("headers"):
            raise SystemExit(f"contract properties or others surfaced as headers: {record['headers']}")
        if "native_attempts" in record and (record["native_attempts"], record["attempts"]) != (0, 0):
            raise SystemExit(f"a first delivery reads attempts {record['attempts']}, native {record['native_attempts']}")
    print(f"{len(sent)} bodies identical byte for byte")


def compare_retry(original_path, retried_path):
    from babelqueue.codec import EnvelopeCodec

    original = EnvelopeCodec.decode(load(original_path)[0]["body"])
    original["attempts"] = 1
    retried = load(retried_path)[0]
    if retried["body"] != EnvelopeCodec.encode(original):
        raise SystemExit(f"the retry copy differs: {retried['body']}")
    if (retried["native_attempts"], retried["attempts"]) != (0, 1):
        raise SystemExit(f"the retry copy reads attempts {retried['attempts']}, native {retried['native_attempts']}")
    print("the retry copy is the original with attempts 1")


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "produce":
        produce(args[0], args[1], int(args[2]), args[3], args[4])
    elif command == "inspect":
        inspect(args[0], args[1], int(args[2]), args[3])
    elif command == "handle":
        handle(args[0], args[1], int(args[2]))
    elif command == "flaky":
        flaky(args[0], args[1], int(args[2]), args[3])
    elif command == "fail-once":
        fail_once(args[0], args[1])
    elif command == "dead-letter":
        dead_letter(args[0], args[1], args[2], args[3])
    elif command == "abandons":
        abandons(args[0], args[1], int(args[2]))
    elif command == "compare":
        compare(args[0], args[1])
    elif command == "compare-retry":
        compare_retry(args[0], args[1])
    else:
        raise SystemExit("unknown command " + command)

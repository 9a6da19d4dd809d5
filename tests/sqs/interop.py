# SPDX-License-Identifier: Apache-2.0
"""The Python side of the SQS interop test (interop.sh), run with the pinned
published SDK (scripts/python-sdk run). Subcommands:

  produce URL QUEUE COUNT OUT     publish through babelqueue's SqsTransport
                                  (with a traceparent header); bodies to OUT
  consume URL QUEUE COUNT OUT     receive raw with boto3 (all attributes),
                                  check each message's MessageAttributes equal
                                  the Python SDK's own projection of its body,
                                  check the Python codec re-encodes the body to
                                  the same bytes, then run it through a
                                  BabelQueue handler; records to OUT
  compare SENT RECEIVED           the bodies sent equal the bodies received
"""
import json
import sys

SPAN = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def produce(url, queue, count, out_path):
    from babelqueue.codec import EnvelopeCodec
    from babelqueue.sqs_transport import SqsTransport

    transport = SqsTransport(url)
    transport._sqs.create_queue(QueueName=queue)  # the C++ side may not have made it yet
    with open(out_path, "w", encoding="utf-8") as out:
        for i in range(count):
            envelope = EnvelopeCodec.make("urn:interop:py", {"i": i, "text": "h\u00e9llo \u4e2d\u6587 \"q\" \\", "x": 0.1},
                                          queue=queue)
            body = EnvelopeCodec.encode(envelope)
            transport.publish_with_headers(queue, body, {"traceparent": SPAN})
            out.write(json.dumps({"body": body}) + "\n")


def consume(url, queue, count, out_path):
    from babelqueue import BabelQueue
    from babelqueue.codec import EnvelopeCodec
    from babelqueue.sqs_transport import SqsTransport

    transport = SqsTransport(url)
    client = transport._sqs
    queue_url = client.get_queue_url(QueueName=queue)["QueueUrl"]
    records = []
    while len(records) < count:
        answer = client.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=5,
                                        MessageAttributeNames=["All"], AttributeNames=["All"],
                                        VisibilityTimeout=0)
        messages = answer.get("Messages") or []
        if not messages:
            raise SystemExit(f"only {len(records)} of {count} messages arrived")
        for message in messages:
            body = message["Body"]
            expected = SqsTransport._merge_attributes(SqsTransport._attributes(body), {"traceparent": SPAN})
            got = {name: {"DataType": spec["DataType"], "StringValue": spec["StringValue"]}
                   for name, spec in message.get("MessageAttributes", {}).items()}
            if got != expected:
                raise SystemExit(f"attributes differ from the Python projection:\n got {got}\n want {expected}")
            if EnvelopeCodec.encode(EnvelopeCodec.decode(body)) != body:
                raise SystemExit("the Python codec does not re-encode the body to the same bytes: " + body)
            records.append({"body": body, "attributes": got})
            if len(records) == count:
                break
    # Now through the Python runtime: every message handled once, then deleted.
    app = BabelQueue(url, queue=queue)
    handled = []
    app.register("urn:interop:cpp", lambda data, meta: handled.append(data["i"]))
    app.consume(queue, max_messages=count, timeout=5, handle_signals=False)
    if sorted(handled) != list(range(count)):
        raise SystemExit(f"the Python runtime handled {sorted(handled)}")
    with open(out_path, "w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")


def compare(sent_path, received_path):
    def bodies(path):
        with open(path, encoding="utf-8") as lines:
            return sorted(json.loads(line)["body"] for line in lines if line.strip())

    sent, received = bodies(sent_path), bodies(received_path)
    if sent != received:
        raise SystemExit(f"bodies differ: sent {len(sent)}, received {len(received)}")
    with open(received_path, encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            headers = record.get("headers")
            if headers is not None:
                if headers.get("traceparent") != SPAN:
                    raise SystemExit(f"traceparent lost: {headers}")
                if any(name.startswith("bq-") for name in headers):
                    raise SystemExit(f"contract attributes surfaced as headers: {headers}")
                if record.get("native_attempts") != 0:
                    raise SystemExit(f"a first delivery reads native attempts {record.get('native_attempts')}")
    print(f"{len(sent)} bodies identical byte for byte")


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "produce":
        produce(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif command == "consume":
        consume(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif command == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit("unknown command " + command)

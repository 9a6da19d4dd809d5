# SPDX-License-Identifier: Apache-2.0
"""The published Python SDK's side of the Kafka interop test (run by
interop_test.sh through scripts/python-sdk).

  publish URL TOPIC COUNT OUTFILE         publish COUNT envelopes, write each body to OUTFILE (one per line)
  publish-delayed URL TOPIC DELAY_MS OUTFILE  park one envelope on retry tier 1 (tiers [DELAY_MS])
  consume URL GROUP TOPIC COUNT OUTFILE   pop COUNT records, ack them, write "body\theaders-json" lines
"""

import json
import sys
import time

from babelqueue.codec import EnvelopeCodec
from babelqueue.kafka_transport import KafkaTransport


def publish(url, topic, count, outfile, delay_ms=None):
    transport = KafkaTransport(url, retry_tiers_ms=[delay_ms] if delay_ms else None)
    with open(outfile, "w", encoding="utf-8") as out:
        for n in range(count):
            body = EnvelopeCodec.encode(
                EnvelopeCodec.make("urn:interop:kafka:python", {"n": n, "text": "héllo 中文"}, queue=topic)
            )
            if delay_ms:
                transport.publish_delayed(topic, body, delay_ms)
            else:
                transport.publish(topic, body)
            out.write(body + "\n")
    transport._producer_().flush(30)
    transport.close()


def consume(url, group, topic, count, outfile):
    transport = KafkaTransport(url, group_id=group)
    got = []
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        message = transport.pop(topic, timeout=1.0)
        if message is None:
            continue
        EnvelopeCodec.decode(message.body)  # must be a valid envelope for the Python SDK
        # The SDK's ReceivedMessage.headers does not carry Kafka's record
        # headers; the confluent-kafka record it holds does.
        record_headers = {k: v.decode("utf-8") for k, v in (message.handle.headers() or [])}
        got.append((message.body, record_headers))
        transport.ack(message)
    transport.close()
    with open(outfile, "w", encoding="utf-8") as out:
        for body, headers in got:
            out.write(body + "\t" + json.dumps(headers, sort_keys=True) + "\n")
    return 0 if len(got) == count else 1


def main(argv):
    mode = argv[1]
    if mode == "publish":
        publish(argv[2], argv[3], int(argv[4]), argv[5])
        return 0
    if mode == "publish-delayed":
        publish(argv[2], argv[3], 1, argv[5], delay_ms=int(argv[4]))
        return 0
    if mode == "consume":
        return consume(argv[2], argv[3], argv[4], int(argv[5]), argv[6])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

# SPDX-License-Identifier: Apache-2.0
"""The Python side of the Pulsar interop test (run by interop_test.sh through
scripts/python-sdk): the published SDK (babelqueue[pulsar]) and, for batches,
the plain pulsar-client it sits on.

  subscribe URL QUEUE                     create the SDK's subscription (it subscribes lazily,
                                          at the latest position: messages sent before are lost)
  publish URL QUEUE COUNT OUTFILE         publish COUNT envelopes through the SDK, one body a line
  consume URL QUEUE COUNT OUTFILE         pop COUNT messages through the SDK, ack them, write
                                          "body\\tproperties-json\\tredelivery" lines
  batch URL QUEUE COUNT CODEC OUTFILE     publish COUNT envelopes with pulsar-client's batching
                                          producer, compressed with CODEC (LZ4, ZLib, ZSTD, SNAPPY),
                                          in one batch; one body a line
  work-fail URL QUEUE MAX_ATTEMPTS N      run the SDK's runtime on QUEUE with a handler that always
                                          fails and dead-lettering on, for N messages
"""

import json
import sys
import time

import pulsar
from babelqueue import BabelQueue
from babelqueue.codec import EnvelopeCodec
from babelqueue.pulsar_transport import PulsarTransport


def subscribe(url, queue):
    transport = PulsarTransport(url)
    transport.pop(queue, timeout=0.5)
    transport.close()


def publish(url, queue, count, outfile):
    transport = PulsarTransport(url)
    with open(outfile, "w", encoding="utf-8") as out:
        for n in range(count):
            body = EnvelopeCodec.encode(
                EnvelopeCodec.make("urn:interop:pulsar:python", {"n": n, "text": "héllo 中文"}, queue=queue)
            )
            transport.publish(queue, body)
            out.write(body + "\n")
    transport.close()


def consume(url, queue, count, outfile):
    transport = PulsarTransport(url)
    got = []
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        message = transport.pop(queue, timeout=1.0)
        if message is None:
            continue
        EnvelopeCodec.decode(message.body)  # must be a valid envelope for the Python SDK
        raw = message.handle
        got.append((raw.data().decode("utf-8"), dict(raw.properties()), raw.redelivery_count()))
        transport.ack(message)
    transport.close()
    with open(outfile, "w", encoding="utf-8") as out:
        for body, properties, redelivery in got:
            out.write(body + "\t" + json.dumps(properties, sort_keys=True) + "\t" + str(redelivery) + "\n")
    return 0 if len(got) == count else 1


def batch(url, queue, count, codec, outfile):
    client = pulsar.Client(url)
    producer = client.create_producer(
        "persistent://public/default/" + queue,
        batching_enabled=True,
        batching_max_messages=count,
        batching_max_publish_delay_ms=1000,
        compression_type=getattr(pulsar.CompressionType, codec),
    )
    bodies = []
    for n in range(count):
        body = EnvelopeCodec.encode(
            EnvelopeCodec.make("urn:interop:pulsar:batch", {"n": n, "pad": "x" * 200}, queue=queue)
        )
        bodies.append(body)
        producer.send_async(body.encode("utf-8"), None, properties={"bq-job": "urn:interop:pulsar:batch",
                                                                    "bq-attempts": "0", "n": str(n)})
    producer.flush()
    client.close()
    with open(outfile, "w", encoding="utf-8") as out:
        for body in bodies:
            out.write(body + "\n")


def work_fail(url, queue, max_attempts, max_messages):
    app = BabelQueue(transport=PulsarTransport(url), queue=queue, max_attempts=max_attempts, dead_letter=True)

    @app.handler("urn:interop:pulsar:fails")
    def fails(data, meta):
        raise RuntimeError("python handler fails on purpose")

    app.consume(queue, max_messages=max_messages, timeout=10.0, handle_signals=False)
    # libpulsar sends acknowledgements in groups: closing flushes them.
    app.transport.close()


def main(argv):
    mode = argv[1]
    if mode == "subscribe":
        subscribe(argv[2], argv[3])
        return 0
    if mode == "publish":
        publish(argv[2], argv[3], int(argv[4]), argv[5])
        return 0
    if mode == "consume":
        return consume(argv[2], argv[3], int(argv[4]), argv[5])
    if mode == "batch":
        batch(argv[2], argv[3], int(argv[4]), argv[5], argv[6])
        return 0
    if mode == "work-fail":
        work_fail(argv[2], argv[3], int(argv[4]), int(argv[5]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

# SPDX-License-Identifier: Apache-2.0
"""The published Python SDK's side of the RabbitMQ interop test.

  python_peer.py publish URL QUEUE COUNT   publish COUNT envelopes (with a traceparent
                                           header) and print each body, one JSON string
                                           per line
  python_peer.py consume URL QUEUE COUNT   pop COUNT messages and print one JSON object per
                                           line: {"body": ..., "headers": {...}}
"""
import json
import sys
import time

from babelqueue import EnvelopeCodec
from babelqueue.pika_transport import PikaTransport


def main() -> int:
    mode, url, queue, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    transport = PikaTransport(url)
    try:
        if mode == "publish":
            for i in range(count):
                envelope = EnvelopeCodec.make(
                    "urn:interop:python:sent", {"index": i, "text": "h\u00e9llo \u4e2d\u6587"}, queue=queue
                )
                body = EnvelopeCodec.encode(envelope)
                transport.publish_with_headers(queue, body, {"traceparent": f"00-{'a' * 32}-{i:016x}-01"})
                print(json.dumps(body), flush=True)
            return 0
        if mode == "consume":
            got = 0
            deadline = time.monotonic() + 30
            while got < count and time.monotonic() < deadline:
                message = transport.pop(queue, timeout=0.2)
                if message is None:
                    continue
                print(json.dumps({"body": message.body, "headers": message.headers}), flush=True)
                transport.ack(message)
                got += 1
            return 0 if got == count else 1
        print(f"unknown mode {mode}", file=sys.stderr)
        return 2
    finally:
        transport.close()


if __name__ == "__main__":
    sys.exit(main())

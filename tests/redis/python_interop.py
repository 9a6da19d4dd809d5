# SPDX-License-Identifier: Apache-2.0
"""The Python side of the Redis interop test (interop_test.sh), run in the
pinned babelqueue[redis] virtual environment (scripts/python-sdk run).

  produce URL QUEUE COUNT OUTFILE   publishes COUNT envelopes made by the Python SDK (every odd one
                                    with a traceparent header through publish_with_headers), one
                                    JSON line {"body","headers"} per message to OUTFILE
  consume URL QUEUE COUNT OUTFILE   pops COUNT messages with the Python transport and dispatches
                                    them to a BabelQueue app handler (which acks them); writes
                                    {"body","headers","reencoded","handled"} lines
  hold URL QUEUE                    pops one message and exits without settling it, as a Python
                                    worker killed mid-handler leaves its reservation in
                                    <queue>:processing
"""

import json
import sys

from babelqueue import BabelQueue
from babelqueue.codec import EnvelopeCodec
from babelqueue.headers import headers_from_context
from babelqueue.redis_transport import RedisTransport

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def produce(url, queue, count, outfile):
    transport = RedisTransport(url)
    with open(outfile, "w", encoding="utf-8") as out:
        for i in range(count):
            data = {"i": i, "text": "h\u00e9llo <&> \u4e2d\u6587 \"q\" \\", "nested": {"b": True, "a": None},
                    "list": [1, -2, "x"]}
            body = EnvelopeCodec.encode(EnvelopeCodec.make("urn:interop:python", data, queue=queue))
            headers = {"traceparent": TRACEPARENT} if i % 2 == 1 else {}
            if headers:
                transport.publish_with_headers(queue, body, headers)
            else:
                transport.publish(queue, body)
            out.write(json.dumps({"body": body, "headers": headers}, ensure_ascii=False) + "\n")


def consume(url, queue, count, outfile):
    transport = RedisTransport(url)
    app = BabelQueue(transport=transport, queue=queue)
    handled = []

    def handler(data, meta):
        handled.append({"data": data, "headers": dict(headers_from_context() or {})})

    app.register("urn:interop:cpp", handler)
    lines = []
    for _ in range(count * 4):
        if len(lines) == count:
            break
        received = transport.pop(queue, timeout=1.0)
        if received is None:
            continue
        before = len(handled)
        reencoded = EnvelopeCodec.encode(EnvelopeCodec.decode(received.body)) == received.body
        app.dispatch(received)  # routes to the handler and acks
        lines.append({"body": received.body, "headers": dict(received.headers), "reencoded": reencoded,
                      "handled": len(handled) == before + 1})
    with open(outfile, "w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    processing = transport._redis.llen(queue + ":processing")
    if len(lines) != count or processing != 0:
        print(f"consumed {len(lines)} of {count}; {processing} left in {queue}:processing", file=sys.stderr)
        return 1
    return 0


def hold(url, queue):
    transport = RedisTransport(url)
    received = transport.pop(queue, timeout=5.0)
    return 0 if received is not None else 1


def main(argv):
    mode = argv[1]
    if mode == "produce":
        produce(argv[2], argv[3], int(argv[4]), argv[5])
        return 0
    if mode == "consume":
        return consume(argv[2], argv[3], int(argv[4]), argv[5])
    if mode == "hold":
        return hold(argv[2], argv[3])
    print(f"unknown mode {mode}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

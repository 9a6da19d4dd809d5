# SPDX-License-Identifier: Apache-2.0
"""The published Python SDK's Artemis transport, timed: the side of
bench/artemis/artemis_bench.cpp that runs in Python (scripts/python-sdk).

  python_sdk_bench.py URL QUEUE publish N BODY   publish BODY N times to QUEUE
  python_sdk_bench.py URL QUEUE consume N        pop + ack N messages of QUEUE

Each prints one line, "msg/s <rate>". publish sends its first message before
the clock starts (that attaches the sender link) and times the other N - 1;
consume times everything, the first pop (which attaches the receiver) too, as
the C++ side does. It uses ArtemisTransport as an application would: its
publish() (one message at a time, each waiting for the broker's outcome) and
its pop() + ack() (credit 1).
"""

import sys
import time

from babelqueue.artemis_transport import ArtemisTransport


def main(argv):
    if len(argv) < 4 or argv[2] not in ("publish", "consume"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    url, queue, mode, count = argv[0], argv[1], argv[2], int(argv[3])
    transport = ArtemisTransport(url)
    try:
        if mode == "publish":
            body = argv[4]
            transport.publish(queue, body)
            start = time.perf_counter()
            for _ in range(count - 1):
                transport.publish(queue, body)
            timed = count - 1
        else:
            start = time.perf_counter()
            for received in range(count):
                message = transport.pop(queue, 10.0)
                if message is None:
                    print(f"python_sdk_bench: {queue} ran dry after {received} of {count}", file=sys.stderr)
                    return 1
                transport.ack(message)
            timed = count
        elapsed = time.perf_counter() - start
    finally:
        transport.close()
    print(f"msg/s {timed / elapsed:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# SPDX-License-Identifier: Apache-2.0
"""Azure Service Bus test server: queues over AMQP 1.0 on 127.0.0.1, as the
service behaves where its clients can tell (see docs/transports/servicebus-test-server.md).

    python tests/servicebus/server --port 5694 --key-name RootManageSharedAccessKey --key KEY

The key may also come from the environment (SERVICEBUS_TEST_SERVER_KEY), so
that it does not show in the process list. Messages live in memory: they
survive any client's disconnect but not a restart of the server.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import sys

# Run as a directory (python path/to/server): the sibling modules import each other by name.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import amqp_server  # noqa: E402
import sections  # noqa: E402
from entities import Namespace, Settings  # noqa: E402


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(prog="servicebus-test-server", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=5672)
    parser.add_argument("--key-name", default="RootManageSharedAccessKey",
                        help="the shared access key's name (SharedAccessKeyName)")
    parser.add_argument("--key", default=os.environ.get("SERVICEBUS_TEST_SERVER_KEY"),
                        help="the shared access key (SharedAccessKey); default $SERVICEBUS_TEST_SERVER_KEY")
    parser.add_argument("--lock-duration", type=_positive, default=30.0,
                        help="peek-lock duration of every queue, in seconds (default 30, as in the service)")
    parser.add_argument("--max-delivery-count", type=_count, default=10,
                        help="deliveries before a message is dead-lettered (default 10, as in the service)")
    parser.add_argument("--max-message-size", type=_count, default=256 * 1024,
                        help="largest message accepted, in bytes (default 262144, the Standard tier's limit)")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)

    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        parser.error(f"--host must be a loopback address (got {args.host!r}): this is a test server")
    if not args.key:
        parser.error("no shared access key: pass --key or set SERVICEBUS_TEST_SERVER_KEY")

    logging.basicConfig(level=args.log_level.upper(), stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(message)s")
    # proton logs an error for every socket a client closed before the server's last frames went
    # out (a client that exits without closing its connection): routine for a test server.
    logging.getLogger("proton").addFilter(lambda record: "Couldn't send" not in record.getMessage())
    # The process ends on SIGTERM with a clean exit status (the broker script stops it so).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    settings = Settings(lock_duration=args.lock_duration, max_delivery_count=args.max_delivery_count)
    namespace = Namespace(settings, dead_letter_body=sections.dead_lettered)
    config = amqp_server.Config(host=args.host, port=args.port, key_name=args.key_name, key=args.key,
                                max_message_size=args.max_message_size)
    try:
        amqp_server.serve(config, namespace)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# SPDX-License-Identifier: Apache-2.0
"""What Microsoft's client never exercises, checked on the Service Bus test server with plain
python-qpid-proton (the server's own venv): an attach without a token is refused, a link is
detached when its token expires, a released delivery is not counted, and a session receiver is
refused. One PASS/FAIL line per check.

    python server_checks.py PORT KEY_NAME   (the key in $SERVICEBUS_TEST_SERVER_KEY)
"""

from __future__ import annotations

import os
import sys
import time
import uuid

from proton import Message, symbol
from proton.utils import BlockingConnection, LinkDetached

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "server"))

import sas  # noqa: E402


class CheckFailed(Exception):
    pass


def put_token(conn: BlockingConnection, resource: str, key_name: str, key: str, lifetime: int) -> None:
    receiver = conn.create_receiver("$cbs")
    sender = conn.create_sender("$cbs")
    token = sas.sign(resource, key_name, key, int(time.time()) + lifetime)
    sender.send(Message(id=uuid.uuid4(), body=token,
                        properties={"operation": "put-token", "type": "jwt", "name": resource}))
    status = (receiver.receive(timeout=5).properties or {}).get("status-code")
    if status != 202:
        raise CheckFailed(f"put-token answered {status}")


def main(argv: list) -> int:
    port, key_name = argv
    key = os.environ["SERVICEBUS_TEST_SERVER_KEY"]
    url = f"amqp://127.0.0.1:{port}"
    run = uuid.uuid4().hex[:8]
    failures = 0

    def connect() -> BlockingConnection:
        return BlockingConnection(url, timeout=5, allowed_mechs="ANONYMOUS")

    def attach_without_token() -> str:
        conn = connect()
        try:
            conn.create_sender(f"unauthorized-{run}")
        except LinkDetached as exc:
            if "amqp:unauthorized-access" not in str(exc):
                raise CheckFailed(f"refused with another condition: {exc}") from None
            return "detached with amqp:unauthorized-access"
        finally:
            conn.close()
        raise CheckFailed("the attach was accepted")

    def token_expiry_detaches() -> str:
        queue = f"short-token-{run}"
        conn = connect()
        try:
            put_token(conn, f"sb://127.0.0.1:{port}/{queue}", key_name, key, 2)
            sender = conn.create_sender(queue)
            sender.send(Message(body=b"in time"))
            time.sleep(3.5)
            try:
                sender.send(Message(body=b"too late"))
            except LinkDetached as exc:
                if "amqp:unauthorized-access" not in str(exc):
                    raise CheckFailed(f"detached with another condition: {exc}") from None
                return "the link was detached after the token's expiry"
            raise CheckFailed("a send after the token expired was accepted")
        finally:
            conn.close()

    def released_is_not_counted() -> str:
        queue = f"released-{run}"
        conn = connect()
        try:
            put_token(conn, f"sb://127.0.0.1:{port}/{queue}", key_name, key, 300)
            conn.create_sender(queue).send(Message(body=b"given back"))
            counts = []
            receiver = conn.create_receiver(queue, credit=1)
            for _ in range(2):
                msg = receiver.receive(timeout=5)
                counts.append(msg.delivery_count)
                if len(counts) == 1:
                    receiver.release(delivered=False)
                else:
                    receiver.accept()
            if counts != [0, 0]:
                raise CheckFailed(f"header delivery-count {counts} after a release")
            return "header delivery-count 0, 0"
        finally:
            conn.close()

    def session_receiver_refused() -> str:
        queue = f"sessions-{run}"
        conn = connect()
        try:
            put_token(conn, f"sb://127.0.0.1:{port}/{queue}", key_name, key, 300)
            from proton.reactor import Filter  # pylint: disable=import-outside-toplevel

            try:
                conn.create_receiver(queue, options=Filter({symbol("com.microsoft:session-filter"): "s1"}))
            except LinkDetached as exc:
                if "amqp:not-implemented" not in str(exc):
                    raise CheckFailed(f"refused with another condition: {exc}") from None
                return "detached with amqp:not-implemented"
            raise CheckFailed("a session receiver was attached")
        finally:
            conn.close()

    for name, check in (("attach_without_token_refused", attach_without_token),
                        ("token_expiry_detaches_links", token_expiry_detaches),
                        ("released_is_not_counted", released_is_not_counted),
                        ("session_receiver_refused", session_receiver_refused)):
        try:
            print(f"PASS {name}: {check()}", flush=True)
        except Exception as exc:  # every check reports, whatever broke it
            failures += 1
            print(f"FAIL {name}: {type(exc).__name__}: {exc}", flush=True)
    print(f"{4 - failures} passed, {failures} failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

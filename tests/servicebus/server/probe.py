# SPDX-License-Identifier: Apache-2.0
"""Readiness probe of the Service Bus test server: a real exchange, not a port check.

    python probe.py HOST PORT KEY_NAME   (the key in $SERVICEBUS_TEST_SERVER_KEY)

Connects with SASL ANONYMOUS, attaches the $cbs request/response links, puts a
SAS token signed with the namespace's key and expects status-code 202 with the
request's message-id as correlation-id. Exit status 0 when ready, 1 otherwise.
"""

from __future__ import annotations

import os
import sys
import time
import uuid

from proton import Message
from proton.utils import BlockingConnection

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sas  # noqa: E402


def main(argv: list) -> int:
    if len(argv) != 3:
        print("usage: probe.py HOST PORT KEY_NAME (key in $SERVICEBUS_TEST_SERVER_KEY)", file=sys.stderr)
        return 2
    host, port, key_name = argv
    key = os.environ.get("SERVICEBUS_TEST_SERVER_KEY", "")
    resource = f"sb://{host}:{port}/probe"
    token = sas.sign(resource, key_name, key, int(time.time()) + 300)
    try:
        conn = BlockingConnection(f"amqp://{host}:{port}", timeout=5, allowed_mechs="ANONYMOUS")
        try:
            receiver = conn.create_receiver("$cbs")
            sender = conn.create_sender("$cbs")
            request = Message(id=uuid.uuid4(), reply_to="$cbs", body=token, properties={
                "operation": "put-token", "type": "servicebus.windows.net:sastoken", "name": resource})
            sender.send(request)
            reply = receiver.receive(timeout=5)
            status = (reply.properties or {}).get("status-code")
            if status != 202 or reply.correlation_id != request.id:
                code = None if status is None else int(status)
                print(f"probe: put-token answered status-code {code} "
                      f"({(reply.properties or {}).get('status-description')}), "
                      f"correlation-id {reply.correlation_id}", file=sys.stderr)
                return 1
        finally:
            conn.close()
    except Exception as exc:  # not reachable, refused, timed out: not ready
        print(f"probe: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# SPDX-License-Identifier: Apache-2.0
"""The published Python SDK's own Service Bus transport (babelqueue[azureservicebus], pinned in
scripts/python-sdk) against the Service Bus test server: its URL and connection-string
handling, publish with the native projection, pop, ack, a handler retry, and the attempts it
reads after native abandons. One PASS/FAIL line per check.

    python python_sdk_check.py --url sb://127.0.0.1:5694 --connection-string 'Endpoint=...'

The SDK takes the namespace from the URL and the credentials from
AZURE_SERVICEBUS_CONNECTION_STRING, which this sets from --connection-string.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from typing import List

from azure.servicebus import ServiceBusClient


class CheckFailed(Exception):
    pass


def expect_equal(actual, expected, what: str) -> None:
    if actual != expected:
        raise CheckFailed(f"{what}: expected {expected!r}, got {actual!r}")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--connection-string", required=True)
    args = parser.parse_args(argv)
    os.environ["AZURE_SERVICEBUS_CONNECTION_STRING"] = args.connection_string

    import babelqueue  # pylint: disable=import-outside-toplevel
    from babelqueue import BabelQueue  # pylint: disable=import-outside-toplevel

    run = uuid.uuid4().hex[:8]
    raw = ServiceBusClient.from_connection_string(args.connection_string)
    failures = 0

    def report(name: str, fn) -> None:
        nonlocal failures
        try:
            detail = fn()
            print(f"PASS {name}{f': {detail}' if detail else ''}", flush=True)
        except Exception as exc:  # every check reports, whatever broke it
            failures += 1
            print(f"FAIL {name}: {type(exc).__name__}: {exc}", flush=True)

    print(f"babelqueue {babelqueue.__version__}", flush=True)

    # -- publish: the native projection, read back with Microsoft's client ------------------
    q1 = f"sdk-publish-{run}"
    app = BabelQueue(args.url, queue=q1)

    def publish_projection() -> str:
        msg_id = app.publish("urn:babel:orders:created", {"order": 1}, trace_id="trace-sdk")
        with raw.get_queue_receiver(q1) as receiver:
            peeked = receiver.peek_messages(max_message_count=1)
        expect_equal(len(peeked), 1, "messages on the queue")
        m = peeked[0]
        body = json.loads(b"".join(m.body))
        expect_equal(m.body_type.value, "data", "body section")
        expect_equal(m.subject, "urn:babel:orders:created", "subject")
        expect_equal(m.correlation_id, "trace-sdk", "correlation-id")
        expect_equal(m.message_id, msg_id, "message-id")
        expect_equal(m.content_type, "application/json", "content-type")
        props = {k.decode(): v for k, v in (m.application_properties or {}).items()}
        expect_equal(props.get("bq-schema-version"), 1, "bq-schema-version")
        expect_equal(props.get("bq-created-at"), body["meta"]["created_at"], "bq-created-at")
        return f"subject, correlation-id, message-id, content-type, bq- properties {sorted(props)}"

    report("publish_projection", publish_projection)

    # -- consume: pop, handler, ack ---------------------------------------------------------
    def consume_and_ack() -> str:
        seen = []
        app.register("urn:babel:orders:created", lambda data, meta: seen.append(data))
        handled = app.consume(max_messages=1, timeout=5, handle_signals=False)
        expect_equal(handled, 1, "messages handled")
        expect_equal(seen, [{"order": 1}], "handler payloads")
        with raw.get_queue_receiver(q1) as receiver:
            expect_equal(receiver.peek_messages(max_message_count=5), [], "messages left after the ack")
        return "handled once, completed"

    report("consume_and_ack", consume_and_ack)

    # -- a retry: the handler fails once; the runtime republishes with attempts + 1 ---------
    q2 = f"sdk-retry-{run}"
    retry_app = BabelQueue(args.url, queue=q2, max_attempts=3)

    def handler_retry() -> str:
        attempts: List[int] = []

        def flaky(data, meta, envelope):
            attempts.append(envelope.get("attempts"))
            if len(attempts) == 1:
                raise RuntimeError("first try fails")

        retry_app.register("urn:babel:orders:retried", flaky)
        retry_app.publish("urn:babel:orders:retried", {"order": 2})
        handled = retry_app.consume(max_messages=2, timeout=5, handle_signals=False)
        expect_equal(handled, 2, "deliveries handled (the failure and the retry)")
        expect_equal(attempts, [0, 1], "attempts the handler saw")
        with raw.get_queue_receiver(q2) as receiver:
            expect_equal(receiver.peek_messages(max_message_count=5), [], "messages left after the retry")
        return f"attempts seen {attempts}"

    report("handler_retry", handler_retry)

    # -- native redelivery: what the SDK reads after abandons --------------------------------
    q3 = f"sdk-abandon-{run}"
    transport_app = BabelQueue(args.url, queue=q3)

    def attempts_after_abandons() -> str:
        transport_app.publish("urn:babel:orders:abandoned", {"order": 3})
        transport = transport_app.transport
        readings = []
        for _ in range(3):
            received = transport.pop(q3, timeout=5)
            if received is None:
                raise CheckFailed(f"no delivery after {len(readings)} abandons")
            header_count = received.handle.delivery_count
            readings.append((header_count, json.loads(received.body)["attempts"]))
            if len(readings) < 3:
                transport.abandon(received)
            else:
                transport.ack(received)
        headers = [h for h, _ in readings]
        attempts = [a for _, a in readings]
        expect_equal(headers, [0, 1, 2], "header delivery-count after 0, 1 and 2 abandons")
        # The binding's rule, attempts = DeliveryCount - 1 with DeliveryCount = header + 1,
        # gives 0, 1, 2; the SDK subtracts 1 from the raw header, so it reads one low.
        return f"header delivery-count {headers}, SDK attempts {attempts} (the binding's rule gives [0, 1, 2])"

    report("attempts_after_abandons", attempts_after_abandons)

    for closable in (app, retry_app, transport_app):
        closable.transport.close()
    raw.close()
    print(f"{4 - failures} passed, {failures} failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# SPDX-License-Identifier: Apache-2.0
"""Microsoft's own Service Bus client (azure-servicebus, PyPI) against the Service Bus test
server: every operation the transport relies on, one check each, printed PASS or FAIL.

    python official_client_test.py --connection-string 'Endpoint=sb://127.0.0.1:5694;...' \
        --lock-duration 5 --max-delivery-count 10 [--only NAME ...]

The lock duration and MaxDeliveryCount are the server's (scripts/broker info servicebus
prints both). Every check works on queues of its own, so a rerun against a running server
starts clean. Exit status 1 when any check failed.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
import traceback
import uuid
from typing import Dict, List, Optional

from azure.servicebus import (
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceiveMode,
    ServiceBusSubQueue,
    __version__ as AZURE_SERVICEBUS_VERSION,
)
from azure.servicebus.exceptions import MessageLockLostError, ServiceBusAuthenticationError

UTC = datetime.timezone.utc


class CheckFailed(Exception):
    pass


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise CheckFailed(what)


def expect_equal(actual, expected, what: str) -> None:
    if actual != expected:
        raise CheckFailed(f"{what}: expected {expected!r}, got {actual!r}")


def body_text(message) -> str:
    return b"".join(message.body).decode("utf-8")


class Checks:
    def __init__(self, connection_string: str, lock_duration: float, max_delivery_count: int) -> None:
        self.cs = connection_string
        self.lock = lock_duration
        self.max_delivery_count = max_delivery_count
        self.client = ServiceBusClient.from_connection_string(connection_string, retry_total=1)
        self.run_id = uuid.uuid4().hex[:8]

    def queue(self, name: str) -> str:
        return f"official-{name}-{self.run_id}"

    def send(self, queue: str, *messages: ServiceBusMessage) -> None:
        with self.client.get_queue_sender(queue) as sender:
            sender.send_messages(list(messages) if len(messages) > 1 else messages[0])

    def receiver(self, queue: str, **kwargs):
        return self.client.get_queue_receiver(queue, **kwargs)

    def expect_empty(self, queue: str, what: str, sub_queue=None) -> None:
        with self.receiver(queue, sub_queue=sub_queue) as receiver:
            peeked = receiver.peek_messages(max_message_count=10)
            expect(not peeked, f"{what}: peek still shows {[m.sequence_number for m in peeked]}")
            got = receiver.receive_messages(max_message_count=1, max_wait_time=1)
            expect(not got, f"{what}: a receive still got sequence number {got and got[0].sequence_number}")

    # -- the checks ------------------------------------------------------------------------

    def check_send_and_peek_lock_receive(self) -> None:
        q = self.queue("send")
        sent = ServiceBusMessage(
            '{"job":"urn:babel:orders:created"}', subject="urn:babel:orders:created",
            correlation_id="trace-1", message_id="id-1", content_type="application/json",
            application_properties={"bq-schema-version": 1, "bq-source-lang": "python"})
        before = datetime.datetime.now(UTC)
        self.send(q, sent)
        with self.receiver(q) as receiver:
            got = receiver.receive_messages(max_message_count=1, max_wait_time=5)
            expect_equal(len(got), 1, "messages received")
            m = got[0]
            received_at = datetime.datetime.now(UTC)
            expect_equal(body_text(m), '{"job":"urn:babel:orders:created"}', "body")
            expect_equal(m.body_type.value, "data", "body section")
            expect_equal(m.subject, "urn:babel:orders:created", "subject")
            expect_equal(m.correlation_id, "trace-1", "correlation-id")
            expect_equal(m.message_id, "id-1", "message-id")
            expect_equal(m.content_type, "application/json", "content-type")
            props = {k.decode(): v for k, v in (m.application_properties or {}).items()}
            expect_equal(props.get("bq-schema-version"), 1, "application property bq-schema-version")
            expect_equal(props.get("bq-source-lang"), b"python", "application property bq-source-lang")
            expect(isinstance(m.sequence_number, int) and m.sequence_number >= 1,
                   f"sequence number {m.sequence_number!r}")
            expect_equal(m.delivery_count, 0, "header delivery-count of a first delivery")
            expect(isinstance(m.lock_token, uuid.UUID), f"lock token {m.lock_token!r} is a UUID")
            # the lock token is both the delivery tag (GUID bytes, little-endian) and the annotation
            tag_token = uuid.UUID(bytes_le=m._delivery_tag)  # pylint: disable=protected-access
            annotated = m.raw_amqp_message.annotations.get(b"x-opt-lock-token")
            expect_equal(annotated, tag_token, "x-opt-lock-token against the delivery tag")
            slack = datetime.timedelta(seconds=2)
            expect(before - slack <= m.enqueued_time_utc <= received_at + slack,
                   f"enqueued time {m.enqueued_time_utc} between {before} and {received_at}")
            lock_end = m.locked_until_utc
            expected_end = received_at + datetime.timedelta(seconds=self.lock)
            expect(abs((lock_end - expected_end).total_seconds()) < 2,
                   f"locked-until {lock_end} is about now + {self.lock}s ({expected_end})")
            receiver.complete_message(m)
        self.expect_empty(q, "after complete")

    def check_batch_send(self) -> None:
        q = self.queue("batch")
        self.send(q, *(ServiceBusMessage(f"batch-{i}") for i in range(3)))
        with self.receiver(q) as receiver:
            got = []
            deadline = time.time() + 10
            while len(got) < 3 and time.time() < deadline:
                got += receiver.receive_messages(max_message_count=3 - len(got), max_wait_time=2)
            expect_equal([body_text(m) for m in got], ["batch-0", "batch-1", "batch-2"], "bodies in order")
            seqs = [m.sequence_number for m in got]
            expect(seqs == sorted(seqs) and len(set(seqs)) == 3, f"rising sequence numbers {seqs}")
            for m in got:
                receiver.complete_message(m)
        self.expect_empty(q, "after completing the batch")

    def check_scheduled_send(self) -> None:
        q = self.queue("scheduled")
        due = datetime.datetime.now(UTC) + datetime.timedelta(seconds=3)
        with self.client.get_queue_sender(q) as sender:
            # the schedule-message management operation ...
            seqs = sender.schedule_messages(ServiceBusMessage("by-operation"), due)
            expect(len(seqs) == 1 and seqs[0] >= 1, f"schedule_messages returned {seqs}")
            # ... and a plain send with ScheduledEnqueueTime (the x-opt-scheduled-enqueue-time annotation)
            sender.send_messages(ServiceBusMessage("by-annotation", scheduled_enqueue_time_utc=due))
        with self.receiver(q) as receiver:
            peeked = receiver.peek_messages(max_message_count=10)
            expect_equal(sorted(body_text(m) for m in peeked), ["by-annotation", "by-operation"],
                         "peek shows both scheduled messages")
            early = receiver.receive_messages(max_message_count=2, max_wait_time=1)
            expect(not early, f"received before the scheduled time: {[body_text(m) for m in early]}")
            got = []
            deadline = time.time() + 15
            while len(got) < 2 and time.time() < deadline:
                got += receiver.receive_messages(max_message_count=2 - len(got), max_wait_time=2)
            arrived = datetime.datetime.now(UTC)
            expect_equal(sorted(body_text(m) for m in got), ["by-annotation", "by-operation"],
                         "both arrive after the scheduled time")
            expect(arrived >= due, f"arrived at {arrived}, before {due}")
            for m in got:
                expect(m.scheduled_enqueue_time_utc is not None and
                       abs((m.scheduled_enqueue_time_utc - due).total_seconds()) < 0.01,
                       f"scheduled enqueue time {m.scheduled_enqueue_time_utc} is {due}")
                receiver.complete_message(m)

    def check_cancel_scheduled(self) -> None:
        q = self.queue("cancel")
        due = datetime.datetime.now(UTC) + datetime.timedelta(seconds=2)
        with self.client.get_queue_sender(q) as sender:
            seqs = sender.schedule_messages([ServiceBusMessage("cancelled"), ServiceBusMessage("kept")], due)
            expect_equal(len(seqs), 2, "sequence numbers for two scheduled messages")
            sender.cancel_scheduled_messages(seqs[0])
        time.sleep(2.5)
        with self.receiver(q) as receiver:
            got = receiver.receive_messages(max_message_count=2, max_wait_time=3)
            expect_equal([body_text(m) for m in got], ["kept"], "only the message not cancelled arrives")
            receiver.complete_message(got[0])
        self.expect_empty(q, "after the cancelled schedule")

    def check_peek(self) -> None:
        q = self.queue("peek")
        self.send(q, *(ServiceBusMessage(f"peek-{i}") for i in range(3)))
        with self.receiver(q) as receiver:
            peeked = receiver.peek_messages(max_message_count=10)
            expect_equal([body_text(m) for m in peeked], ["peek-0", "peek-1", "peek-2"], "peeked bodies")
            seqs = [m.sequence_number for m in peeked]
            later = receiver.peek_messages(max_message_count=10, sequence_number=seqs[1])
            expect_equal([m.sequence_number for m in later], seqs[1:], "peek from the second sequence number")
            expect(all(m.lock_token is None for m in peeked), "peeked messages carry no lock")
            # peeking locked nothing: all three arrive, each on its first delivery
            got = []
            deadline = time.time() + 10
            while len(got) < 3 and time.time() < deadline:
                got += receiver.receive_messages(max_message_count=3 - len(got), max_wait_time=2)
            expect_equal([m.sequence_number for m in got], seqs, "received after peeking")
            expect_equal([m.delivery_count for m in got], [0, 0, 0], "delivery counts after peeking")
            # a locked message still shows in a peek
            again = receiver.peek_messages(max_message_count=10, sequence_number=seqs[0])
            expect_equal([m.sequence_number for m in again], seqs, "peek shows locked messages")
            for m in got:
                receiver.complete_message(m)

    def check_lock_renewal(self) -> None:
        q = self.queue("renew")
        self.send(q, ServiceBusMessage("long job"))
        with self.receiver(q) as receiver, self.receiver(q) as other:
            m = receiver.receive_messages(max_message_count=1, max_wait_time=5)[0]
            first_until = m.locked_until_utc
            hold_until = time.time() + 2 * self.lock + 1
            renewals = 0
            while time.time() < hold_until:
                time.sleep(self.lock / 3)
                new_until = receiver.renew_message_lock(m)
                renewals += 1
                expect(new_until > first_until, f"renewal {renewals} moved locked-until to {new_until}")
                stolen = other.receive_messages(max_message_count=1, max_wait_time=0.2)
                expect(not stolen, "another receiver got the message while its lock was being renewed")
            # held for more than twice the lock duration: the lock is still ours
            receiver.complete_message(m)
        self.expect_empty(q, "after completing the renewed message")

    def check_abandon(self) -> None:
        q = self.queue("abandon")
        self.send(q, ServiceBusMessage("retry me"))
        counts = []
        with self.receiver(q) as receiver:
            for _ in range(3):
                m = receiver.receive_messages(max_message_count=1, max_wait_time=5)[0]
                counts.append(m.delivery_count)
                if len(counts) < 3:
                    receiver.abandon_message(m)
                else:
                    receiver.complete_message(m)
        expect_equal(counts, [0, 1, 2], "header delivery-count after 0, 1 and 2 abandons")
        self.expect_empty(q, "after complete")

    def check_dead_letter(self) -> None:
        q = self.queue("deadletter")
        self.send(q, ServiceBusMessage("poison", message_id="poison-1",
                                       application_properties={"kept": "yes"}))
        with self.receiver(q) as receiver:
            m = receiver.receive_messages(max_message_count=1, max_wait_time=5)[0]
            receiver.dead_letter_message(m, reason="poison", error_description="not JSON")
        self.expect_empty(q, "the queue after dead-lettering")
        with self.receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            got = dlq.receive_messages(max_message_count=1, max_wait_time=5)
            expect_equal(len(got), 1, "messages in the dead-letter queue")
            d = got[0]
            expect_equal(body_text(d), "poison", "dead-lettered body")
            expect_equal(d.message_id, "poison-1", "dead-lettered message-id")
            expect_equal(d.dead_letter_reason, "poison", "DeadLetterReason")
            expect_equal(d.dead_letter_error_description, "not JSON", "DeadLetterErrorDescription")
            expect_equal(d.dead_letter_source, q, "x-opt-deadletter-source")
            props = {k.decode(): v for k, v in (d.application_properties or {}).items()}
            expect_equal(props.get("kept"), b"yes", "the message's own application property")
            dlq.complete_message(d)
        self.expect_empty(q, "the dead-letter queue after complete", sub_queue=ServiceBusSubQueue.DEAD_LETTER)

    def check_max_delivery_count(self) -> None:
        q = self.queue("maxdelivery")
        self.send(q, ServiceBusMessage("never handled"))
        counts = []
        with self.receiver(q) as receiver:
            for _ in range(self.max_delivery_count):
                got = receiver.receive_messages(max_message_count=1, max_wait_time=5)
                expect(len(got) == 1, f"delivery {len(counts) + 1} of {self.max_delivery_count} arrived")
                counts.append(got[0].delivery_count)
                receiver.abandon_message(got[0])
        expect_equal(counts, list(range(self.max_delivery_count)), "header delivery-counts")
        self.expect_empty(q, f"the queue after {self.max_delivery_count} abandons")
        with self.receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            got = dlq.receive_messages(max_message_count=1, max_wait_time=5)
            expect_equal(len(got), 1, "messages in the dead-letter queue")
            d = got[0]
            expect_equal(body_text(d), "never handled", "dead-lettered body")
            expect_equal(d.dead_letter_reason, "MaxDeliveryCountExceeded", "DeadLetterReason")
            expect_equal(d.delivery_count, self.max_delivery_count, "delivery-count in the dead-letter queue")
            dlq.complete_message(d)

    def check_lock_expiry_redelivers(self) -> None:
        q = self.queue("expiry")
        self.send(q, ServiceBusMessage("crashed worker"))
        with self.receiver(q) as first:
            m = first.receive_messages(max_message_count=1, max_wait_time=5)[0]
            expect_equal(m.delivery_count, 0, "first delivery-count")
            time.sleep(self.lock + 1.0)
            with self.receiver(q) as second:
                got = second.receive_messages(max_message_count=1, max_wait_time=5)
                expect_equal(len(got), 1, "redelivered after the lock expired")
                r = got[0]
                expect_equal(r.sequence_number, m.sequence_number, "the same message")
                expect_equal(r.delivery_count, 1, "header delivery-count after one lock expiry")
                expect(r.lock_token != m.lock_token, "a new lock token")
                try:
                    first.complete_message(m)
                except MessageLockLostError:
                    pass
                else:
                    raise CheckFailed("completing with the expired lock did not raise MessageLockLostError")
                try:
                    first.renew_message_lock(m)
                except MessageLockLostError:
                    pass
                else:
                    raise CheckFailed("renewing the expired lock did not raise MessageLockLostError")
                second.complete_message(r)
        self.expect_empty(q, "after completing the redelivered message")

    def check_receive_and_delete(self) -> None:
        q = self.queue("receivedelete")
        self.send(q, ServiceBusMessage("once"), ServiceBusMessage("twice"))
        with self.receiver(q, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as receiver:
            got = []
            deadline = time.time() + 10
            while len(got) < 2 and time.time() < deadline:
                got += receiver.receive_messages(max_message_count=2 - len(got), max_wait_time=2)
            expect_equal([body_text(m) for m in got], ["once", "twice"], "bodies")
            expect(all(m.lock_token is None for m in got), "no lock tokens in receive-and-delete mode")
        self.expect_empty(q, "after receive-and-delete")

    def check_defer(self) -> None:
        q = self.queue("defer")
        self.send(q, ServiceBusMessage("later"))
        with self.receiver(q) as receiver:
            m = receiver.receive_messages(max_message_count=1, max_wait_time=5)[0]
            seq = m.sequence_number
            receiver.defer_message(m)
            none = receiver.receive_messages(max_message_count=1, max_wait_time=1)
            expect(not none, "a deferred message is not received again by a plain receive")
            got = receiver.receive_deferred_messages([seq])
            expect_equal([d.sequence_number for d in got], [seq], "receive_deferred_messages")
            # a deferred message is settled through $management (update-disposition)
            receiver.complete_message(got[0])
        self.expect_empty(q, "after completing the deferred message")

    def check_wrong_key_refused(self) -> None:
        parts = [p for p in self.cs.split(";") if not p.startswith("SharedAccessKey=")]
        wrong = ";".join(parts + ["SharedAccessKey=not-the-key"])
        self._expect_refused(wrong, "a wrong key")

    def check_expired_token_refused(self) -> None:
        # the client's own signer, with an expiry a minute ago
        from azure.servicebus._pyamqp.utils import generate_sas_token  # pylint: disable=import-outside-toplevel

        fields = dict(p.split("=", 1) for p in self.cs.split(";") if "=" in p)
        host = fields["Endpoint"].split("://", 1)[1].rstrip("/")
        queue = self.queue("expired")
        token = generate_sas_token(f"sb://{host}/{queue}", fields["SharedAccessKeyName"],
                                   fields["SharedAccessKey"], int(time.time()) - 60)
        cs = f"Endpoint=sb://{host};SharedAccessSignature={token};UseDevelopmentEmulator=true"
        self._expect_refused(cs, "an expired token", queue)

    def _expect_refused(self, connection_string: str, what: str, queue: Optional[str] = None) -> None:
        client = ServiceBusClient.from_connection_string(connection_string, retry_total=0)
        try:
            with client, client.get_queue_sender(queue or self.queue("refused")) as sender:
                sender.send_messages(ServiceBusMessage("must not arrive"))
        except ServiceBusAuthenticationError as exc:
            cause = repr(exc.__cause__ or exc.__context__ or exc)
            text = f"{exc} {cause}"
            expect("401" in text, f"the error for {what} names status 401: {text}")
            return
        raise CheckFailed(f"{what} was accepted")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connection-string", required=True)
    parser.add_argument("--lock-duration", type=float, required=True)
    parser.add_argument("--max-delivery-count", type=int, required=True)
    parser.add_argument("--only", nargs="*", default=None, help="run only these checks")
    args = parser.parse_args(argv)

    checks = Checks(args.connection_string, args.lock_duration, args.max_delivery_count)
    names = [n[len("check_"):] for n in dir(Checks) if n.startswith("check_")]
    order = ["send_and_peek_lock_receive", "batch_send", "scheduled_send", "cancel_scheduled", "peek",
             "lock_renewal", "abandon", "dead_letter", "max_delivery_count", "lock_expiry_redelivers",
             "receive_and_delete", "defer", "wrong_key_refused", "expired_token_refused"]
    assert sorted(order) == sorted(names), "every check is in the run order"
    selected = [n for n in order if args.only is None or n in args.only]
    print(f"azure-servicebus {AZURE_SERVICEBUS_VERSION}; lock duration {args.lock_duration}s, "
          f"MaxDeliveryCount {args.max_delivery_count}", flush=True)
    results: Dict[str, Optional[str]] = {}
    for name in selected:
        started = time.time()
        try:
            getattr(checks, "check_" + name)()
            results[name] = None
            print(f"PASS {name} ({time.time() - started:.1f}s)", flush=True)
        except Exception as exc:  # every check reports, whatever broke it
            results[name] = f"{type(exc).__name__}: {exc}"
            print(f"FAIL {name} ({time.time() - started:.1f}s): {results[name]}", flush=True)
            if not isinstance(exc, CheckFailed):
                traceback.print_exc(file=sys.stdout)
    checks.client.close()
    failed = [n for n, r in results.items() if r is not None]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# SPDX-License-Identifier: Apache-2.0
"""The queues of the test namespace: messages, sequence numbers, peek-locks,
scheduled and deferred messages, and dead-lettering, as Azure Service Bus keeps
them. No AMQP here: the protocol layer (amqp_server.py) turns frames into these
calls, and every call takes the current time, so the rules can be read (and
tested) without a network or a clock.

The rules that a client can observe:

- Every message an entity accepts gets the next sequence number of that entity
  (1, 2, ...) and its enqueued time.
- A peek-lock receive locks the available message with the lowest sequence
  number for the lock duration under a new lock token (a random UUID).
- DeliveryCount, as the service counts it, starts at 1 and rises by one each
  time a lock ends without the message being settled: an abandon (modified
  with delivery-failed) or a lock that expires. The AMQP header carries
  DeliveryCount - 1, so `failures` below is what the header says.
- When DeliveryCount reaches MaxDeliveryCount and the lock ends again in
  failure, the message moves to the entity's dead-letter queue with
  DeadLetterReason "MaxDeliveryCountExceeded".
- A released delivery (the client gives back a message it never handed to the
  application) unlocks the message without counting a failure.
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Tuple

DEAD_LETTER_SUFFIX = "/$deadletterqueue"

AVAILABLE = "available"
LOCKED = "locked"
SCHEDULED = "scheduled"
DEFERRED = "deferred"

MAX_DELIVERY_COUNT_REASON = "MaxDeliveryCountExceeded"


class LockLost(Exception):
    """The lock token names no lock that is still held (expired, settled, or never issued)."""


class NotFound(Exception):
    """A sequence number names no message in the state the operation needs."""


class NotAllowed(Exception):
    """The operation is not possible on this entity (e.g. dead-lettering from a dead-letter queue)."""


@dataclass
class Settings:
    lock_duration: float = 30.0  # seconds, Azure's default
    max_delivery_count: int = 10  # Azure's default


@dataclass
class Message:
    """One message in an entity. `body` is opaque to this module: the protocol layer stores
    the sections it received there and re-encodes them on every delivery."""

    sequence_number: int
    enqueued_ms: int
    body: object
    state: str = AVAILABLE
    failures: int = 0  # DeliveryCount - 1: what the AMQP header's delivery-count carries
    scheduled_ms: Optional[int] = None
    lock_token: Optional[uuid.UUID] = None
    locked_until_ms: int = 0
    deferred: bool = False  # set aside by a defer: only receive-by-sequence-number reaches it
    dead_letter: Optional[Tuple[str, str, str]] = None  # (source entity, reason, description)
    lock_owner: object = None  # the receiver link the lock was granted to, for settlement checks


@dataclass(eq=False)  # identity: entities are kept in sets and looked up by object
class Entity:
    """A queue or a queue's dead-letter queue."""

    name: str
    settings: Settings
    is_dead_letter_queue: bool = False
    dead_letter_queue: Optional["Entity"] = None
    messages: Dict[int, Message] = field(default_factory=dict)
    _available: List[int] = field(default_factory=list)  # heap of sequence numbers
    _scheduled: List[Tuple[int, int]] = field(default_factory=list)  # heap of (due ms, sequence number)
    _lock_expiry: List[Tuple[int, int, uuid.UUID]] = field(default_factory=list)  # (until ms, seq, token)
    _locks: Dict[uuid.UUID, int] = field(default_factory=dict)
    _sequence: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    # Called with the entity whenever a message becomes available, so that the protocol layer
    # can hand it to a waiting receiver.
    on_available: Optional[Callable[["Entity"], None]] = None
    # Makes the body a dead-lettered message carries: (body, source entity, reason, description).
    dead_letter_body: Optional[Callable[[object, str, str, str], object]] = None

    # -- enqueue ---------------------------------------------------------------------------

    def enqueue(self, body: object, now_ms: int, scheduled_ms: Optional[int] = None,
                failures: int = 0, dead_letter: Optional[Tuple[str, str, str]] = None) -> Message:
        seq = next(self._sequence)
        msg = Message(sequence_number=seq, enqueued_ms=now_ms, body=body, failures=failures,
                      scheduled_ms=scheduled_ms, dead_letter=dead_letter)
        self.messages[seq] = msg
        if scheduled_ms is not None and scheduled_ms > now_ms:
            msg.state = SCHEDULED
            heapq.heappush(self._scheduled, (scheduled_ms, seq))
        else:
            self._make_available(msg)
        return msg

    def cancel_scheduled(self, seq: int) -> None:
        msg = self.messages.get(seq)
        if msg is None or msg.state != SCHEDULED:
            raise NotFound(f"no scheduled message with sequence number {seq} in {self.name}")
        del self.messages[seq]  # its heap entry is skipped when it comes up

    # -- receive ---------------------------------------------------------------------------

    def has_available(self, now_ms: int) -> bool:
        self.tick(now_ms)
        return self._peek_available() is not None

    def receive(self, now_ms: int, peek_lock: bool, owner: object = None) -> Optional[Message]:
        """The next available message: locked (peek-lock) or removed (receive-and-delete)."""
        self.tick(now_ms)
        seq = self._peek_available()
        if seq is None:
            return None
        heapq.heappop(self._available)
        msg = self.messages[seq]
        if peek_lock:
            self._lock(msg, now_ms, owner)
        else:
            del self.messages[seq]
        return msg

    def receive_deferred(self, seqs: List[int], now_ms: int, peek_lock: bool,
                         owner: object = None) -> List[Message]:
        """receive-by-sequence-number: deferred messages only, as the service does it."""
        self.tick(now_ms)
        found = []
        for seq in seqs:
            msg = self.messages.get(seq)
            if msg is None or msg.state != DEFERRED:
                raise NotFound(f"no deferred message with sequence number {seq} in {self.name}")
            found.append(msg)
        for msg in found:
            if peek_lock:
                self._lock(msg, now_ms, owner)
            else:
                del self.messages[msg.sequence_number]
        return found

    def peek(self, from_seq: int, count: int, now_ms: int) -> List[Message]:
        """Messages from a sequence number on, in every state (locked, scheduled and deferred
        ones too), without locking them."""
        self.tick(now_ms)
        out = []
        for seq, msg in self.messages.items():  # insertion order is sequence order
            if seq < from_seq:
                continue
            out.append(msg)
            if len(out) >= count:
                break
        return out

    # -- settlement ------------------------------------------------------------------------

    def locked(self, token: uuid.UUID, now_ms: int) -> Message:
        """The message whose lock `token` still holds; LockLost otherwise."""
        self.tick(now_ms)
        seq = self._locks.get(token)
        if seq is None:
            raise LockLost(f"the lock {token} is not held in {self.name} (expired, settled or unknown)")
        return self.messages[seq]

    def complete(self, token: uuid.UUID, now_ms: int) -> None:
        msg = self.locked(token, now_ms)
        self._unlock(msg)
        del self.messages[msg.sequence_number]

    def abandon(self, token: uuid.UUID, now_ms: int, failed: bool = True) -> None:
        """Unlock; `failed` counts the delivery (abandon), a release does not."""
        msg = self.locked(token, now_ms)
        self._unlock(msg)
        self._return(msg, now_ms, failed)

    def defer(self, token: uuid.UUID, now_ms: int) -> None:
        msg = self.locked(token, now_ms)
        self._unlock(msg)
        msg.deferred = True
        msg.state = DEFERRED

    def dead_letter(self, token: uuid.UUID, now_ms: int, reason: str, description: str) -> None:
        msg = self.locked(token, now_ms)
        if self.dead_letter_queue is None:
            raise NotAllowed(f"{self.name} is a dead-letter queue: its messages cannot be dead-lettered")
        self._unlock(msg)
        self._move_to_dead_letter_queue(msg, now_ms, reason, description)

    def renew(self, token: uuid.UUID, now_ms: int) -> int:
        msg = self.locked(token, now_ms)
        msg.locked_until_ms = now_ms + self._lock_ms()
        heapq.heappush(self._lock_expiry, (msg.locked_until_ms, msg.sequence_number, token))
        return msg.locked_until_ms

    # -- time ------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """Expire the locks and release the scheduled messages that are due."""
        while self._lock_expiry and self._lock_expiry[0][0] <= now_ms:
            until, seq, token = heapq.heappop(self._lock_expiry)
            msg = self.messages.get(seq)
            if msg is None or msg.lock_token != token or msg.locked_until_ms != until:
                continue  # settled, renewed or relocked meanwhile
            self._unlock(msg)
            self._return(msg, now_ms, failed=True)
        while self._scheduled and self._scheduled[0][0] <= now_ms:
            _, seq = heapq.heappop(self._scheduled)
            msg = self.messages.get(seq)
            if msg is not None and msg.state == SCHEDULED:
                self._make_available(msg)

    def next_deadline_ms(self) -> Optional[int]:
        times = [heap[0][0] for heap in (self._lock_expiry, self._scheduled) if heap]
        return min(times) if times else None

    def counts(self) -> Dict[str, int]:
        out = {AVAILABLE: 0, LOCKED: 0, SCHEDULED: 0, DEFERRED: 0}
        for msg in self.messages.values():
            out[msg.state] += 1
        return out

    # -- internals -------------------------------------------------------------------------

    def _lock_ms(self) -> int:
        return int(round(self.settings.lock_duration * 1000))

    def _peek_available(self) -> Optional[int]:
        while self._available:
            seq = self._available[0]
            msg = self.messages.get(seq)
            if msg is not None and msg.state == AVAILABLE:
                return seq
            heapq.heappop(self._available)  # stale: settled or moved meanwhile
        return None

    def _make_available(self, msg: Message) -> None:
        msg.state = AVAILABLE
        heapq.heappush(self._available, msg.sequence_number)
        if self.on_available is not None:
            self.on_available(self)

    def _lock(self, msg: Message, now_ms: int, owner: object) -> None:
        msg.state = LOCKED
        msg.lock_token = uuid.uuid4()
        msg.locked_until_ms = now_ms + self._lock_ms()
        msg.lock_owner = owner
        self._locks[msg.lock_token] = msg.sequence_number
        heapq.heappush(self._lock_expiry, (msg.locked_until_ms, msg.sequence_number, msg.lock_token))

    def _unlock(self, msg: Message) -> None:
        if msg.lock_token is not None:
            self._locks.pop(msg.lock_token, None)
        msg.lock_token = None
        msg.locked_until_ms = 0
        msg.lock_owner = None

    def _return(self, msg: Message, now_ms: int, failed: bool) -> None:
        if failed:
            msg.failures += 1
            # DeliveryCount (failures + 1 from here on) would exceed MaxDeliveryCount: the
            # message has been delivered MaxDeliveryCount times and none of them settled it.
            if self.dead_letter_queue is not None and msg.failures >= self.settings.max_delivery_count:
                n = self.settings.max_delivery_count
                self._move_to_dead_letter_queue(
                    msg, now_ms, MAX_DELIVERY_COUNT_REASON,
                    f"Message could not be consumed after {n} delivery attempts.")
                return
        if msg.deferred:
            msg.state = DEFERRED
        else:
            self._make_available(msg)

    def _move_to_dead_letter_queue(self, msg: Message, now_ms: int, reason: str, description: str) -> None:
        assert self.dead_letter_queue is not None
        del self.messages[msg.sequence_number]
        body = msg.body
        if self.dead_letter_body is not None:
            body = self.dead_letter_body(body, self.name, reason, description)
        self.dead_letter_queue.enqueue(body, now_ms, failures=msg.failures,
                                       dead_letter=(self.name, reason, description))


class Namespace:
    """The entities of the namespace, created on first use (a queue and its dead-letter queue
    together). Names are case-insensitive, as in the service; an entity keeps the spelling it
    was first used with."""

    def __init__(self, settings: Settings,
                 dead_letter_body: Optional[Callable[[object, str, str, str], object]] = None) -> None:
        self.settings = settings
        self.dead_letter_body = dead_letter_body
        self._entities: Dict[str, Entity] = {}
        self.on_available: Optional[Callable[[Entity], None]] = None

    def entity(self, path: str) -> Entity:
        """The queue (or '<queue>/$DeadLetterQueue') named by an entity path."""
        lower = path.lower()
        if lower.endswith(DEAD_LETTER_SUFFIX):
            queue = self.queue(path[: -len(DEAD_LETTER_SUFFIX)])
            assert queue.dead_letter_queue is not None
            return queue.dead_letter_queue
        return self.queue(path)

    def queue(self, name: str) -> Entity:
        key = name.lower()
        queue = self._entities.get(key)
        if queue is None:
            dlq = Entity(name=name + "/$DeadLetterQueue", settings=self.settings, is_dead_letter_queue=True,
                         on_available=self._available)
            queue = Entity(name=name, settings=self.settings, dead_letter_queue=dlq, on_available=self._available,
                           dead_letter_body=self.dead_letter_body)
            self._entities[key] = queue
        return queue

    def entities(self) -> List[Entity]:
        out = []
        for queue in self._entities.values():
            out.append(queue)
            if queue.dead_letter_queue is not None:
                out.append(queue.dead_letter_queue)
        return out

    def tick(self, now_ms: int) -> None:
        for entity in self.entities():
            entity.tick(now_ms)

    def next_deadline_ms(self) -> Optional[int]:
        times = [t for t in (e.next_deadline_ms() for e in self.entities()) if t is not None]
        return min(times) if times else None

    def _available(self, entity: Entity) -> None:
        if self.on_available is not None:
            self.on_available(entity)

# SPDX-License-Identifier: Apache-2.0
"""AMQP 1.0 messages as sequences of sections.

The server keeps what a client sent byte for byte (properties, application
properties, body, footer) and rebuilds only the sections the service itself
writes on every delivery: the header (its delivery-count) and the message
annotations (x-opt-sequence-number, x-opt-enqueued-time, x-opt-lock-token,
x-opt-locked-until). So the application properties' AMQP types (an int stays
an int, a long a long) reach a receiver exactly as they were sent.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from proton import Data, Described, symbol, timestamp, ulong

HEADER = 0x70
DELIVERY_ANNOTATIONS = 0x71
MESSAGE_ANNOTATIONS = 0x72
PROPERTIES = 0x73
APPLICATION_PROPERTIES = 0x74
DATA = 0x75
AMQP_SEQUENCE = 0x76
AMQP_VALUE = 0x77
FOOTER = 0x78

_SYMBOLIC = {
    "amqp:header:list": HEADER,
    "amqp:delivery-annotations:map": DELIVERY_ANNOTATIONS,
    "amqp:message-annotations:map": MESSAGE_ANNOTATIONS,
    "amqp:properties:list": PROPERTIES,
    "amqp:application-properties:map": APPLICATION_PROPERTIES,
    "amqp:data:binary": DATA,
    "amqp:amqp-sequence:list": AMQP_SEQUENCE,
    "amqp:amqp-value:*": AMQP_VALUE,
    "amqp:footer:map": FOOTER,
}

SCHEDULED_ENQUEUE_TIME = symbol("x-opt-scheduled-enqueue-time")
SEQUENCE_NUMBER = symbol("x-opt-sequence-number")
ENQUEUED_TIME = symbol("x-opt-enqueued-time")
LOCK_TOKEN = symbol("x-opt-lock-token")
LOCKED_UNTIL = symbol("x-opt-locked-until")
DEAD_LETTER_SOURCE = symbol("x-opt-deadletter-source")


class MalformedMessage(Exception):
    pass


@dataclass
class Section:
    code: int
    raw: bytes
    value: Any  # the section's decoded value (the described value's content)


def split(encoded: bytes) -> List[Section]:
    """The sections of an encoded message, in order."""
    out: List[Section] = []
    view = memoryview(encoded)
    pos = 0
    while pos < len(view):
        data = Data()
        try:
            used = data.decode(bytes(view[pos:]))
        except Exception as exc:  # proton's DataException
            raise MalformedMessage(f"undecodable section at byte {pos}: {exc}") from None
        if used <= 0:
            raise MalformedMessage(f"empty section at byte {pos}")
        data.rewind()
        data.next()
        value = data.get_object()
        if not isinstance(value, Described):
            raise MalformedMessage(f"a section that is not a described value at byte {pos}")
        descriptor = value.descriptor
        if isinstance(descriptor, symbol):
            code = _SYMBOLIC.get(str(descriptor))
        else:
            code = int(descriptor)
        if code is None or not HEADER <= code <= FOOTER:
            raise MalformedMessage(f"unknown section descriptor {descriptor!r}")
        out.append(Section(code, bytes(view[pos:pos + used]), own(value.value)))
        pos += used
    return out


def own(value: Any) -> Any:
    """`value` with every binary copied out of proton's buffer: get_object hands binaries out
    as memoryviews into the Data object, which are garbage once that object is gone."""
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return {own(k): own(v) for k, v in value.items()}
    if isinstance(value, list):
        return [own(v) for v in value]
    return value


def _is_message(sections: List[Section]) -> bool:
    codes = [s.code for s in sections]
    return bool(codes) and codes == sorted(codes) and any(DATA <= c <= AMQP_VALUE for c in codes)


def batch_members(sections: List[Section]) -> Optional[List[bytes]]:
    """The messages of a batch, or None when `sections` is one ordinary message.

    Service Bus clients send a batch as one transfer of message-format 0x80013700 whose Data
    sections each hold a whole encoded message. python-qpid-proton does not expose a
    delivery's message-format, so a batch is recognised by its shape: only Data sections in
    the body, each of which decodes completely into the sections of a message, in order. An
    ordinary message whose binary body is itself an encoded AMQP message would be taken for
    a batch of one; Service Bus applications do not send such bodies.
    """
    bodies = [s for s in sections if DATA <= s.code <= AMQP_VALUE]
    if not bodies or any(s.code != DATA for s in bodies):
        return None
    members = []
    for section in bodies:
        payload = bytes(section.value)
        if len(payload) < 3 or payload[0] != 0x00:
            return None
        try:
            inner = split(payload)
        except MalformedMessage:
            return None
        if not _is_message(inner):
            return None
        members.append(payload)
    return members


@dataclass
class StoredBody:
    """What the server keeps of a message: the header fields and annotations it rewrites, and
    every other section as received (delivery annotations are dropped, as the spec asks)."""

    durable: bool = False
    priority: int = 4
    ttl: Optional[int] = None
    annotations: Dict[Any, Any] = field(default_factory=dict)
    kept: List[Tuple[int, bytes]] = field(default_factory=list)
    size: int = 0

    @classmethod
    def parse(cls, encoded: bytes) -> "StoredBody":
        sections = split(encoded)
        if not _is_message(sections):
            raise MalformedMessage("the message has no body section, or its sections are out of order")
        body = cls(size=len(encoded))
        for section in sections:
            if section.code == HEADER:
                fields = list(section.value or [])
                fields += [None] * (5 - len(fields))
                body.durable = bool(fields[0])
                body.priority = 4 if fields[1] is None else int(fields[1])
                body.ttl = None if fields[2] is None else int(fields[2])
            elif section.code == DELIVERY_ANNOTATIONS:
                continue
            elif section.code == MESSAGE_ANNOTATIONS:
                body.annotations = dict(section.value or {})
            else:
                body.kept.append((section.code, section.raw))
        return body

    def scheduled_enqueue_ms(self) -> Optional[int]:
        value = self.annotations.get(SCHEDULED_ENQUEUE_TIME)
        if value is None:
            return None
        if hasattr(value, "timestamp"):  # a datetime
            return int(value.timestamp() * 1000)
        return int(value)

    def application_properties(self) -> Dict[Any, Any]:
        for code, raw in self.kept:
            if code == APPLICATION_PROPERTIES:
                return dict(split(raw)[0].value or {})
        return {}

    def with_application_properties(self, extra: Dict[str, Any], annotations: Dict[Any, Any]) -> "StoredBody":
        """A copy with application properties added (the service's dead-letter fields)."""
        props = self.application_properties()
        props.update(extra)
        encoded = _encode(Described(ulong(APPLICATION_PROPERTIES), props))
        kept = [(c, r) for c, r in self.kept if c != APPLICATION_PROPERTIES]
        # application-properties come after properties and before the body
        at = next((i for i, (c, _) in enumerate(kept) if c > APPLICATION_PROPERTIES), len(kept))
        kept.insert(at, (APPLICATION_PROPERTIES, encoded))
        merged = dict(self.annotations)
        merged.update(annotations)
        return StoredBody(self.durable, self.priority, self.ttl, merged, kept, self.size)

    def encode(self, delivery_count: int, annotations: Dict[Any, Any]) -> bytes:
        """The message as a receiver gets it: a new header and the annotations merged in."""
        header = Data()
        header.put_described()
        header.enter()
        header.put_ulong(HEADER)
        header.put_list()
        header.enter()
        header.put_bool(self.durable)
        header.put_ubyte(self.priority)
        if self.ttl is None:
            header.put_null()
        else:
            header.put_uint(self.ttl)
        header.put_bool(delivery_count == 0)  # first-acquirer
        header.put_uint(delivery_count)
        header.exit()
        header.exit()
        merged = dict(self.annotations)
        merged.update(annotations)
        parts = [header.encode(), _encode(Described(ulong(MESSAGE_ANNOTATIONS), merged))]
        parts.extend(raw for _, raw in self.kept)
        return b"".join(parts)


def _encode(value: Any) -> bytes:
    data = Data()
    data.put_object(value)
    return data.encode()


def service_annotations(sequence_number: int, enqueued_ms: int, lock_token: Optional[uuid.UUID] = None,
                        locked_until_ms: Optional[int] = None) -> Dict[Any, Any]:
    out: Dict[Any, Any] = {
        SEQUENCE_NUMBER: sequence_number,  # a Python int is encoded as an AMQP long
        ENQUEUED_TIME: timestamp(enqueued_ms),
    }
    if lock_token is not None:
        out[LOCK_TOKEN] = lock_token
        out[LOCKED_UNTIL] = timestamp(locked_until_ms or 0)
    return out


def dead_lettered(body: StoredBody, source: str, reason: str, description: str) -> StoredBody:
    """The body a dead-lettered message carries: the service adds the reason and the description
    as application properties and names the entity it came from in an annotation."""
    return body.with_application_properties(
        {"DeadLetterReason": reason, "DeadLetterErrorDescription": description},
        {DEAD_LETTER_SOURCE: source})

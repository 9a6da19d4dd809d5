# SPDX-License-Identifier: Apache-2.0
"""The request/response operations of '<entity>/$management'.

A request is an AMQP message whose application property 'operation' names
the operation and whose amqp-value body is a map of arguments; the reply
carries 'statusCode', 'statusDescription' (and 'errorCondition' on failure)
as application properties and a map body. 200 is success, 204 "nothing
there" (peek past the end), 410 a lock that is no longer held.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Dict, List, Optional

from proton import UNDESCRIBED, Array, Data, Message, int32, symbol

import sections
from entities import Entity, LockLost, Namespace, NotAllowed, NotFound

VENDOR = "com.microsoft:"
LOCK_LOST = "com.microsoft:message-lock-lost"
MESSAGE_NOT_FOUND = "com.microsoft:message-not-found"


class RequestError(Exception):
    def __init__(self, status: int, condition: str, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.condition = condition
        self.description = description


def reply(status: int, description: str, body: Optional[Dict[str, Any]] = None,
          condition: Optional[str] = None) -> Message:
    props: Dict[str, Any] = {"statusCode": int32(status), "statusDescription": description}
    if condition:
        props["errorCondition"] = symbol(condition)
    return Message(properties=props, body=body)


def _values(value: Any) -> List[Any]:
    if isinstance(value, Array):
        return list(value.elements)
    if isinstance(value, (list, tuple)):
        return list(value)
    if value is None:
        return []
    return [value]


def _lock_tokens(args: Dict[str, Any]) -> List[uuid.UUID]:
    out = []
    for value in _values(args.get("lock-tokens")):
        if isinstance(value, uuid.UUID):
            out.append(value)
        else:
            try:
                out.append(uuid.UUID(str(value)))
            except ValueError:
                raise RequestError(400, "amqp:invalid-field", f"'{value}' is not a lock token") from None
    if not out:
        raise RequestError(400, "amqp:invalid-field", "the request names no lock-tokens")
    return out


def _sequence_numbers(args: Dict[str, Any]) -> List[int]:
    out = [int(v) for v in _values(args.get("sequence-numbers"))]
    if not out:
        raise RequestError(400, "amqp:invalid-field", "the request names no sequence-numbers")
    return out


def _longs(values: List[int]) -> Array:
    return Array(UNDESCRIBED, Data.LONG, *values)


def encode_for_peek(msg: Any) -> bytes:
    body: sections.StoredBody = msg.body
    return body.encode(msg.failures, _annotations(msg, locked=False))


def _annotations(msg: Any, locked: bool) -> Dict[Any, Any]:
    ann = sections.service_annotations(msg.sequence_number, msg.enqueued_ms,
                                       msg.lock_token if locked else None,
                                       msg.locked_until_ms if locked else None)
    return ann


class Management:
    def __init__(self, namespace: Namespace) -> None:
        self.namespace = namespace
        self._operations: Dict[str, Callable[[Entity, Dict[str, Any], int], Message]] = {
            VENDOR + "renew-lock": self.renew_lock,
            VENDOR + "update-disposition": self.update_disposition,
            VENDOR + "schedule-message": self.schedule_message,
            VENDOR + "cancel-scheduled-message": self.cancel_scheduled_message,
            VENDOR + "peek-message": self.peek_message,
            VENDOR + "receive-by-sequence-number": self.receive_by_sequence_number,
        }

    def handle(self, entity: Entity, request: Message, now_ms: int) -> Message:
        props = {str(k): v for k, v in (request.properties or {}).items()}
        operation = str(props.get("operation", ""))
        handler = self._operations.get(operation)
        if handler is None:
            return reply(501, f"The operation '{operation}' is not implemented by this test server.",
                         condition="amqp:not-implemented")
        args = request.body if isinstance(request.body, dict) else {}
        args = {str(k): v for k, v in args.items()}
        try:
            return handler(entity, args, now_ms)
        except RequestError as exc:
            return reply(exc.status, exc.description, condition=exc.condition)
        except LockLost as exc:
            return reply(410, f"The lock supplied is invalid. Either the lock expired, or the message has "
                              f"already been removed from the queue. ({exc})", condition=LOCK_LOST)
        except NotFound as exc:
            return reply(404, str(exc), condition=MESSAGE_NOT_FOUND)
        except NotAllowed as exc:
            return reply(400, str(exc), condition="amqp:not-allowed")
        except sections.MalformedMessage as exc:
            return reply(400, str(exc), condition="amqp:decode-error")

    # -- operations -------------------------------------------------------------------

    def renew_lock(self, entity: Entity, args: Dict[str, Any], now_ms: int) -> Message:
        tokens = _lock_tokens(args)
        for token in tokens:  # all or nothing: check every token before renewing any
            entity.locked(token, now_ms)
        until = [entity.renew(token, now_ms) for token in tokens]
        return reply(200, "OK", {"expirations": Array(UNDESCRIBED, Data.TIMESTAMP, *until)})

    def update_disposition(self, entity: Entity, args: Dict[str, Any], now_ms: int) -> Message:
        status = str(args.get("disposition-status", ""))
        tokens = _lock_tokens(args)
        for token in tokens:
            entity.locked(token, now_ms)
        for token in tokens:
            if status == "completed":
                entity.complete(token, now_ms)
            elif status == "abandoned":
                entity.abandon(token, now_ms, failed=True)
            elif status == "defered":  # sic: the service's spelling
                entity.defer(token, now_ms)
            elif status == "suspended":
                entity.dead_letter(token, now_ms, str(args.get("deadletter-reason") or ""),
                                   str(args.get("deadletter-description") or ""))
            else:
                raise RequestError(400, "amqp:invalid-field", f"unknown disposition-status '{status}'")
        return reply(200, "OK", {})

    def schedule_message(self, entity: Entity, args: Dict[str, Any], now_ms: int) -> Message:
        bodies = []
        for item in _values(args.get("messages")):
            item = {str(k): v for k, v in dict(item).items()}
            encoded = item.get("message")
            if not isinstance(encoded, (bytes, bytearray, memoryview)):
                raise RequestError(400, "amqp:invalid-field", "a scheduled message has no 'message' binary")
            bodies.append(sections.StoredBody.parse(bytes(encoded)))
        if not bodies:
            raise RequestError(400, "amqp:invalid-field", "the request has no messages")
        seqs = [entity.enqueue(body, now_ms, scheduled_ms=body.scheduled_enqueue_ms()).sequence_number
                for body in bodies]
        return reply(200, "OK", {"sequence-numbers": _longs(seqs)})

    def cancel_scheduled_message(self, entity: Entity, args: Dict[str, Any], now_ms: int) -> Message:
        seqs = _sequence_numbers(args)
        entity.tick(now_ms)
        for seq in seqs:
            entity.cancel_scheduled(seq)
        return reply(200, "OK", {})

    def peek_message(self, entity: Entity, args: Dict[str, Any], now_ms: int) -> Message:
        start = int(args.get("from-sequence-number") or 1)
        count = int(args.get("message-count") or 1)
        found = entity.peek(start, count, now_ms)
        if not found:
            return reply(204, "No messages to peek.")
        return reply(200, "OK", {"messages": [{"message": encode_for_peek(m)} for m in found]})

    def receive_by_sequence_number(self, entity: Entity, args: Dict[str, Any], now_ms: int) -> Message:
        seqs = _sequence_numbers(args)
        # receiver-settle-mode 1 (second) is peek-lock, 0 (first) receive-and-delete
        peek_lock = int(args.get("receiver-settle-mode") or 0) == 1
        found = entity.receive_deferred(seqs, now_ms, peek_lock)
        out = []
        for msg in found:
            body: sections.StoredBody = msg.body
            item: Dict[str, Any] = {"message": body.encode(msg.failures, _annotations(msg, locked=peek_lock))}
            if peek_lock:
                item["lock-token"] = msg.lock_token
            out.append(item)
        return reply(200, "OK", {"messages": out})

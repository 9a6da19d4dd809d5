# SPDX-License-Identifier: Apache-2.0
"""The AMQP 1.0 face of the test server, on python-qpid-proton's container.

Everything runs on the container's one thread: frames come in as proton
events, the entities (entities.py) change, and deliveries go out, with no
locks anywhere. A timer wakes the loop to expire locks, release scheduled
messages and close links whose token has expired.

Nodes a client can attach to:

  $cbs                      put-token (claims-based security), answered with
                            status-code 202, or 401 when the token is refused
  <queue>, <queue>/$DeadLetterQueue
                            send (a link whose target is the entity) and
                            receive (source is the entity): peek-lock when the
                            client's snd-settle-mode is unsettled, receive-and-
                            delete when it is settled
  <queue>/$management       the request/response operations of management.py

An address may be a bare path or a URI (amqps://host/queue, sb://host/queue):
the path counts. Every link but those of $cbs needs a token put on the same
connection whose resource covers the entity.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional
from urllib.parse import urlsplit

import cproton_ffi
from proton import Condition, Delivery, Endpoint, Handler, Link, Message, int32, symbol
from proton.reactor import Container

import management
import sas
import sections
from entities import Entity, LockLost, Namespace, NotAllowed

log = logging.getLogger("servicebus-test-server")

CBS_NODE = "$cbs"
MANAGEMENT_SUFFIX = "/$management"
DEAD_LETTER_CONDITION = "com.microsoft:dead-letter"
LOCK_LOST_CONDITION = "com.microsoft:message-lock-lost"
SESSION_FILTER = "com.microsoft:session-filter"

# Credit the server gives a client's sender link, topped up when half is used.
SEND_CREDIT = 500
TICK_SECONDS = 0.05


def error(name: str, description: str) -> Condition:
    """An AMQP error as the service sends it: with a tracking id in its info. (Microsoft's
    Python client also reads the info field of every error it gets, and fails on one
    without it.)"""
    return Condition(name, description, {symbol("com.microsoft:tracking-id"): str(uuid.uuid4())})


def delivery_tag(dlv: Delivery) -> bytes:
    """The tag as bytes (python-qpid-proton's Delivery.tag decodes it as UTF-8 text, and a lock
    token's bytes are no text)."""
    tag = cproton_ffi.lib.pn_delivery_tag(dlv._impl)
    return bytes(cproton_ffi.ffi.unpack(tag.start, tag.size))


def guarded(method: Callable[..., None]) -> Callable[..., None]:
    """An error while handling one event closes that event's connection with
    amqp:internal-error and is logged; the server and its messages carry on."""

    @functools.wraps(method)
    def run(self: "ServiceBusServer", event: Any) -> None:
        try:
            method(self, event)
        except Exception as exc:  # a bug of the test server: keep it visible, keep serving
            log.exception("internal error in %s", method.__name__)
            conn = getattr(event, "connection", None)
            if conn is not None and not conn.state & Endpoint.LOCAL_CLOSED:
                conn.condition = error("amqp:internal-error", f"test server error: {exc}")
                conn.close()
                self._forget_connection(conn)

    return run


def now_ms() -> int:
    return int(time.time() * 1000)


def entity_path(address: Optional[str]) -> str:
    """'amqps://host:5694/orders' -> 'orders'; 'orders/$management' stays as it is."""
    if not address:
        return ""
    if "://" in address:
        return urlsplit(address).path.strip("/")
    return address.strip("/")


@dataclass
class Config:
    host: str
    port: int
    key_name: str
    key: str
    max_message_size: int = 256 * 1024  # the Standard tier's limit


@dataclass
class ConnectionState:
    name: str
    grants: List[sas.Grant] = field(default_factory=list)
    links: List["LinkState"] = field(default_factory=list)

    def authorized(self, path: str, at: float) -> Optional[sas.Grant]:
        """The longest-living grant that covers `path` now."""
        best = None
        for grant in self.grants:
            if grant.expires_at > at and grant.covers(path):
                if best is None or grant.expires_at > best.expires_at:
                    best = grant
        return best


@dataclass
class LinkState:
    link: Link
    conn: ConnectionState
    kind: str  # "cbs", "management" or "entity"
    node: str  # the node's path as the client spelled it
    entity: Optional[Entity] = None
    peek_lock: bool = True
    expires_at: float = 0.0  # when the grant the link was authorised with ends
    # Outgoing deliveries by tag: (entity, lock token) of the message each one carries.
    outstanding: Dict[bytes, Any] = field(default_factory=dict)
    # Responses waiting for credit (request/response nodes).
    pending: List[bytes] = field(default_factory=list)
    closed: bool = False


class ServiceBusServer(Handler):
    def __init__(self, config: Config, namespace: Namespace) -> None:
        super().__init__()
        self.config = config
        self.namespace = namespace
        self.namespace.on_available = self._mark_available
        self.management = management.Management(namespace)
        self._ready: set = set()  # entities with messages that may be waiting for a receiver
        self._consumers: Dict[int, List[LinkState]] = {}  # id(entity) -> receiving links
        self._connections = 0
        self._live: Dict[str, ConnectionState] = {}
        self._last_grant_check = 0.0

    # -- container -----------------------------------------------------------------------

    def on_reactor_init(self, event: Any) -> None:
        event.container.listen(f"{self.config.host}:{self.config.port}")
        event.container.schedule(TICK_SECONDS, self)
        log.info("listening on %s:%d (lock duration %.3gs, max delivery count %d)", self.config.host,
                 self.config.port, self.namespace.settings.lock_duration,
                 self.namespace.settings.max_delivery_count)

    @guarded
    def on_timer_task(self, event: Any) -> None:
        event.container.schedule(TICK_SECONDS, self)  # first, so that an error cannot stop the clock
        self.namespace.tick(now_ms())
        at = time.time()
        if at - self._last_grant_check >= 0.5:
            self._last_grant_check = at
            self._close_expired_links(at)
        self._flush()

    # -- connections and sessions --------------------------------------------------------

    @guarded
    def on_connection_bound(self, event: Any) -> None:
        # The service takes SASL ANONYMOUS and then wants a token on $cbs.
        sasl = event.transport.sasl()
        sasl.allowed_mechs("ANONYMOUS")

    @guarded
    def on_connection_remote_open(self, event: Any) -> None:
        conn = event.connection
        if conn.state & Endpoint.LOCAL_UNINIT:
            self._connections += 1
            conn._sb = ConnectionState(name=f"c{self._connections}")
            self._live[conn._sb.name] = conn._sb
            conn.container = "babelqueue-servicebus-test-server"
            conn.open()
            log.info("%s: open from %s (container %s)", conn._sb.name, getattr(conn, "url", "?"),
                     conn.remote_container)

    @guarded
    def on_session_remote_open(self, event: Any) -> None:
        if event.session.state & Endpoint.LOCAL_UNINIT:
            event.session.open()

    @guarded
    def on_session_remote_close(self, event: Any) -> None:
        if not event.session.state & Endpoint.LOCAL_CLOSED:
            event.session.close()

    @guarded
    def on_connection_remote_close(self, event: Any) -> None:
        self._forget_connection(event.connection)
        if not event.connection.state & Endpoint.LOCAL_CLOSED:
            event.connection.close()

    @guarded
    def on_transport_closed(self, event: Any) -> None:
        if event.connection is not None:
            self._forget_connection(event.connection)

    def _forget_connection(self, conn: Any) -> None:
        state: Optional[ConnectionState] = getattr(conn, "_sb", None)
        if state is None or self._live.pop(state.name, None) is None:
            return
        for ls in list(state.links):
            self._forget_link(ls)
        log.info("%s: closed", state.name)
        state.grants.clear()
        state.links.clear()

    # -- links ---------------------------------------------------------------------------

    @guarded
    def on_link_remote_open(self, event: Any) -> None:
        link = event.link
        if not link.state & Endpoint.LOCAL_UNINIT:
            return
        conn: ConnectionState = link.connection._sb
        remote = link.remote_source if link.is_sender else link.remote_target
        node = entity_path(remote.address)
        lower = node.lower()

        refusal = None
        kind = "entity"
        target = node
        if lower == CBS_NODE:
            kind = "cbs"
        elif lower.endswith(MANAGEMENT_SUFFIX):
            kind = "management"
            target = node[: -len(MANAGEMENT_SUFFIX)]
        if not target:
            refusal = ("amqp:not-found", f"no entity at the address {remote.address!r}")
        elif "/subscriptions/" in lower or (kind != "cbs" and target.startswith("$")):
            refusal = ("amqp:not-implemented", f"{node!r}: this test server has queues only "
                       "(no topics, subscriptions or other special nodes)")
        elif link.is_sender and kind == "entity" and self._has_session_filter(link):
            refusal = ("amqp:not-implemented", "this test server has no sessions")
        grant = None
        if refusal is None and kind != "cbs":
            grant = conn.authorized(target, time.time())
            if grant is None:
                refusal = ("amqp:unauthorized-access",
                           f"Unauthorized access to '{target}': put a valid token for it on $cbs first.")
        if refusal is not None:
            # Answer the attach with no terminus, then detach with the reason, as the service does.
            link.open()
            link.condition = error(refusal[0], refusal[1])
            link.close()
            log.info("%s: refused %s link %r: %s", conn.name, "receive" if link.is_sender else "send", node,
                     refusal[1])
            return

        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        link.snd_settle_mode = link.remote_snd_settle_mode
        # The receiving end decides rcv-settle-mode. Where the client receives, the server echoes
        # what it asked for (second: peek-lock settlement is confirmed by the service). Where the
        # server receives, it settles at once (first): Microsoft's clients ask for second on
        # their sender links too and then wait for the settled disposition.
        link.rcv_settle_mode = link.remote_rcv_settle_mode if link.is_sender else Link.RCV_FIRST
        ls = LinkState(link=link, conn=conn, kind=kind, node=node)
        if grant is not None:
            ls.expires_at = grant.expires_at
        if kind != "cbs":
            ls.entity = self.namespace.entity(target)
        link._sb = ls
        conn.links.append(ls)
        if link.is_receiver:
            link.max_message_size = self.config.max_message_size
        link.open()
        if link.is_receiver:
            link.flow(SEND_CREDIT)
        elif kind == "entity":
            assert ls.entity is not None
            ls.peek_lock = link.remote_snd_settle_mode != Link.SND_SETTLED
            self._consumers.setdefault(id(ls.entity), []).append(ls)
            self._ready.add(ls.entity)
        log.info("%s: attached %s %s link %r%s", conn.name, kind, "receive" if link.is_sender else "send",
                 node, "" if kind != "entity" or not link.is_sender else
                 (" (peek-lock)" if ls.peek_lock else " (receive-and-delete)"))
        self._flush()

    @staticmethod
    def _has_session_filter(link: Link) -> bool:
        data = link.remote_source.filter
        data.rewind()
        if data.next() is None:  # no filter map
            return False
        filters = data.get_object()
        if not isinstance(filters, dict):
            return False
        return bool(filters) and any(str(k) == SESSION_FILTER for k in dict(filters))

    @guarded
    def on_link_remote_close(self, event: Any) -> None:
        link = event.link
        ls: Optional[LinkState] = getattr(link, "_sb", None)
        if ls is not None:
            self._forget_link(ls)
        if not link.state & Endpoint.LOCAL_CLOSED:
            link.close()

    def _forget_link(self, ls: LinkState) -> None:
        """The link is gone. Its locked messages stay locked until their locks expire, as in the
        service: a receiver that vanishes does not give its messages back early."""
        if ls.closed:
            return
        ls.closed = True
        if ls in ls.conn.links:
            ls.conn.links.remove(ls)
        if ls.entity is not None:
            consumers = self._consumers.get(id(ls.entity), [])
            if ls in consumers:
                consumers.remove(ls)
        ls.outstanding.clear()
        ls.pending.clear()

    def _close_expired_links(self, at: float) -> None:
        for conn in list(self._live.values()):
            for ls in list(conn.links):
                if ls.kind == "cbs" or ls.expires_at > at:
                    continue
                target = ls.entity.name if ls.entity is not None else ls.node
                grant = conn.authorized(target, at)
                if grant is not None:
                    ls.expires_at = grant.expires_at
                    continue
                log.info("%s: the token for %r expired; detaching the link", conn.name, ls.node)
                ls.link.condition = error("amqp:unauthorized-access", "The token has expired.")
                ls.link.close()
                self._forget_link(ls)

    # -- flow and dispatch ---------------------------------------------------------------

    @guarded
    def on_link_flow(self, event: Any) -> None:
        link = event.link
        ls: Optional[LinkState] = getattr(link, "_sb", None)
        if ls is None or ls.closed or not link.is_sender:
            return
        if ls.kind == "entity":
            assert ls.entity is not None
            self._ready.add(ls.entity)
            self._flush()
            if link.drain_mode and link.credit > 0:
                link.drained()
        else:
            self._send_pending(ls)

    def _mark_available(self, entity: Entity) -> None:
        self._ready.add(entity)

    def _flush(self) -> None:
        while self._ready:
            entity = self._ready.pop()
            self._dispatch(entity)

    def _dispatch(self, entity: Entity) -> None:
        consumers = self._consumers.get(id(entity))
        if not consumers:
            return
        t = now_ms()
        while True:
            ready = [ls for ls in consumers if ls.link.credit > 0 and not ls.closed]
            if not ready or not entity.has_available(t):
                return
            for ls in ready:
                msg = entity.receive(t, peek_lock=ls.peek_lock, owner=ls)
                if msg is None:
                    return
                self._deliver(ls, entity, msg, t)
            # rotate, so that the next message goes to the next receiver
            consumers.append(consumers.pop(0))

    def _deliver(self, ls: LinkState, entity: Entity, msg: Any, t: int) -> None:
        body: sections.StoredBody = msg.body
        if ls.peek_lock:
            annotations = sections.service_annotations(msg.sequence_number, msg.enqueued_ms, msg.lock_token,
                                                       msg.locked_until_ms)
            tag = msg.lock_token.bytes_le
        else:
            annotations = sections.service_annotations(msg.sequence_number, msg.enqueued_ms)
            tag = uuid.uuid4().bytes_le
        encoded = body.encode(msg.failures, annotations)
        link = ls.link
        dlv = link.delivery(tag)
        link.send(encoded)
        link.advance()
        if ls.peek_lock:
            ls.outstanding[tag] = (entity, msg.lock_token)
        else:
            dlv.settle()

    # -- deliveries ----------------------------------------------------------------------

    @guarded
    def on_delivery(self, event: Any) -> None:
        link = event.link
        dlv = event.delivery
        ls: Optional[LinkState] = getattr(link, "_sb", None)
        if ls is None or ls.closed:
            if link.is_receiver and dlv.readable and not dlv.partial:
                link.recv(dlv.pending)
                link.advance()
            dlv.settle()
            return
        if link.is_receiver:
            self._incoming(ls, dlv)
        else:
            self._outcome(ls, dlv)
        self._flush()

    def _incoming(self, ls: LinkState, dlv: Delivery) -> None:
        link = ls.link
        if dlv.aborted:
            dlv.settle()
            return
        if not dlv.readable or dlv.partial:
            return
        encoded = link.recv(dlv.pending)
        link.advance()
        if ls.kind == "entity":
            self._enqueue(ls, dlv, encoded)
        else:
            self._request(ls, dlv, encoded)
        if link.credit < SEND_CREDIT // 2:
            link.flow(SEND_CREDIT - link.credit)

    def _settle_incoming(self, ls: LinkState, dlv: Delivery, state: int,
                         condition: Optional[Condition] = None) -> None:
        if condition is not None:
            dlv.local.condition = condition
        dlv.update(state)
        dlv.settle()

    def _enqueue(self, ls: LinkState, dlv: Delivery, encoded: bytes) -> None:
        assert ls.entity is not None
        if len(encoded) > self.config.max_message_size:
            self._settle_incoming(ls, dlv, Delivery.REJECTED, error(
                "amqp:link:message-size-exceeded",
                f"The message is {len(encoded)} bytes; the limit is {self.config.max_message_size}."))
            return
        try:
            parsed = sections.split(encoded)
            members = sections.batch_members(parsed)
            bodies = [sections.StoredBody.parse(m) for m in members] if members else \
                [sections.StoredBody.parse(encoded)]
        except sections.MalformedMessage as exc:
            self._settle_incoming(ls, dlv, Delivery.REJECTED, error("amqp:decode-error", str(exc)))
            return
        t = now_ms()
        for body in bodies:
            ls.entity.enqueue(body, t, scheduled_ms=body.scheduled_enqueue_ms())
        self._settle_incoming(ls, dlv, Delivery.ACCEPTED)

    def _outcome(self, ls: LinkState, dlv: Delivery) -> None:
        """A receiver settled (or gave an outcome for) a message the server delivered."""
        if dlv.settled and dlv.local_state:
            # our own echo, settled by both sides now
            dlv.settle()
            return
        state = dlv.remote_state
        if state not in (Delivery.ACCEPTED, Delivery.REJECTED, Delivery.RELEASED, Delivery.MODIFIED):
            if dlv.settled:  # settled with no outcome: the message goes back, uncounted
                state = Delivery.RELEASED
            else:
                return
        entry = ls.outstanding.pop(delivery_tag(dlv), None)
        if entry is None:
            dlv.settle()
            return
        entity, token = entry
        t = now_ms()
        remote = dlv.remote
        echo_condition = None
        echo_state = state
        try:
            if state == Delivery.ACCEPTED:
                entity.complete(token, t)
            elif state == Delivery.RELEASED:
                entity.abandon(token, t, failed=False)
            elif state == Delivery.MODIFIED:
                if remote.undeliverable:
                    entity.defer(token, t)
                else:
                    entity.abandon(token, t, failed=bool(remote.failed))
            else:  # rejected: dead-letter
                reason, description = self._dead_letter_fields(remote.condition)
                entity.dead_letter(token, t, reason, description)
        except LockLost as exc:
            echo_state = Delivery.REJECTED
            echo_condition = error(LOCK_LOST_CONDITION, str(exc))
        except NotAllowed as exc:
            echo_state = Delivery.REJECTED
            echo_condition = error("amqp:not-allowed", str(exc))
        if dlv.settled:
            dlv.settle()
            return
        # rcv-settle-mode second: the service settles back with the outcome it applied
        # (a rejected carrying an error when it could not apply it).
        if echo_state == Delivery.MODIFIED:
            dlv.local.failed = bool(remote.failed)
            dlv.local.undeliverable = bool(remote.undeliverable)
        if echo_condition is not None:
            dlv.local.condition = echo_condition
        dlv.update(echo_state)
        dlv.settle()

    @staticmethod
    def _dead_letter_fields(condition: Optional[Condition]) -> tuple:
        if condition is None:
            return "", ""
        info = condition.info if isinstance(condition.info, dict) else {}
        values = {str(k): v for k, v in info.items()}
        reason = values.get("DeadLetterReason")
        description = values.get("DeadLetterErrorDescription")
        if reason is None and condition.name != DEAD_LETTER_CONDITION:
            reason = condition.name
        if description is None:
            description = condition.description or ""
        return str(reason or ""), str(description or "")

    # -- request/response nodes ----------------------------------------------------------

    def _request(self, ls: LinkState, dlv: Delivery, encoded: bytes) -> None:
        request = Message()
        try:
            request.decode(encoded)
        except Exception as exc:
            self._settle_incoming(ls, dlv, Delivery.REJECTED, error("amqp:decode-error", str(exc)))
            return
        self._settle_incoming(ls, dlv, Delivery.ACCEPTED)
        if ls.kind == "cbs":
            response = self._put_token(ls.conn, request)
        else:
            assert ls.entity is not None
            response = self.management.handle(ls.entity, request, now_ms())
        response.correlation_id = request.id
        if request.reply_to:
            response.address = request.reply_to
        out = self._response_link(ls, request.reply_to)
        if out is None:
            log.warning("%s: no link to answer a request on %r", ls.conn.name, ls.node)
            return
        out.pending.append(response.encode())
        self._send_pending(out)

    def _response_link(self, request_link: LinkState, reply_to: Optional[str]) -> Optional[LinkState]:
        candidates = [ls for ls in request_link.conn.links
                      if ls.link.is_sender and ls.kind == request_link.kind
                      and ls.node.lower() == request_link.node.lower()]
        if reply_to:
            exact = [ls for ls in candidates if ls.link.remote_target.address == reply_to]
            if exact:
                candidates = exact
        same_session = [ls for ls in candidates if ls.link.session == request_link.link.session]
        return (same_session or candidates or [None])[0]

    def _send_pending(self, ls: LinkState) -> None:
        link = ls.link
        while ls.pending and link.credit > 0 and not ls.closed:
            encoded = ls.pending.pop(0)
            dlv = link.delivery(uuid.uuid4().bytes)
            link.send(encoded)
            link.advance()
            if link.snd_settle_mode != Link.SND_UNSETTLED:
                dlv.settle()

    def _put_token(self, conn: ConnectionState, request: Message) -> Message:
        props = {str(k): v for k, v in (request.properties or {}).items()}
        operation = str(props.get("operation", ""))
        token_type = str(props.get("type", ""))
        audience = props.get("name")
        if operation != "put-token":
            return _cbs_reply(400, f"Unsupported operation '{operation}' on $cbs.")
        if token_type not in ("servicebus.windows.net:sastoken", "jwt"):
            return _cbs_reply(400, f"Unknown token type '{token_type}'.")
        token = request.body
        if isinstance(token, bytes):
            token = token.decode("utf-8", "replace")
        if not isinstance(token, str):
            return _cbs_reply(400, "The put-token body must be the token string.")
        # Microsoft's clients put SAS tokens with the type "jwt" as well, so the token itself
        # says what it is. An Azure AD token cannot be checked here.
        if not token.startswith(sas.PREFIX):
            return _cbs_reply(401, "Only shared access signature tokens are accepted by this test server "
                                   "(an Azure AD token needs the real service).")
        try:
            grant = sas.verify(token, self.config.key_name, self.config.key,
                               None if audience is None else str(audience), time.time())
        except sas.TokenRejected as exc:
            log.info("%s: put-token for %r refused: %s", conn.name, audience, exc)
            return _cbs_reply(401, f"InvalidSignature: {exc}")
        conn.grants.append(grant)
        log.info("%s: put-token for %r accepted", conn.name, audience)
        return _cbs_reply(202, "Accepted")


def _cbs_reply(code: int, description: str) -> Message:
    return Message(properties={"status-code": int32(code), "status-description": description})


def _skip_timers_of_finished_sockets() -> None:
    """Keeps one client's reset connection from ending the server.

    python-qpid-proton's IOHandler (0.40) lets a socket's timer fire after it
    finalized the socket's transport (a peer reset the connection while the
    timer was pending) and then dereferences the missing transport: the
    AttributeError ends Container.run(), and the server with it. Such a timer
    has nothing left to do, so it is skipped."""
    from proton._handlers import IOHandler  # the version is pinned by scripts/broker

    expired = IOHandler.on_selectable_expired

    def on_selectable_expired(self, event):  # type: ignore[no-untyped-def]
        if event.selectable._transport is None:
            return
        expired(self, event)

    IOHandler.on_selectable_expired = on_selectable_expired  # type: ignore[method-assign]


def serve(config: Config, namespace: Namespace) -> None:
    _skip_timers_of_finished_sockets()
    Container(ServiceBusServer(config, namespace)).run()

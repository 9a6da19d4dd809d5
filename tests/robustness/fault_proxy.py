#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A TCP proxy on 127.0.0.1 that injects network faults between a client and a broker.

The robustness harness (robustness.py --fault) puts it between the agents and
the broker and switches one fault on for a while, mid-run:

  cut      every connection is reset (RST) in the middle of the next chunk it
           carries: half the chunk is forwarded, the rest never arrives. A
           connection that carries nothing for CUT_IDLE seconds is reset too,
           and so is each new connection, at its first chunk.
  stall    every connection goes silent without a FIN, as behind a dead router
           (half-open): nothing is forwarded either way and nothing is closed.
           Such a connection stays dead after the fault ends; only the client
           closing it (having noticed by its own timeout) frees it. New
           connections made during the fault are accepted and stall too.
  trickle  every byte still flows, TRICKLE_BYTES at a time with a pause of
           TRICKLE_PAUSE seconds between pieces, in both directions.
  refuse   existing connections are reset and the port is closed: a connect
           is refused (ECONNREFUSED) until the fault ends.

Python 3 standard library only; one thread per direction of a connection.
Run alone, it proxies until interrupted and cycles through the faults given:

  fault_proxy.py --target 127.0.0.1:6390 --listen 16390 --fault stall:3 --fault none:5
"""

import argparse
import select
import socket
import struct
import sys
import threading
import time

FAULTS = ("cut", "stall", "trickle", "refuse")
CUT_IDLE = 0.3
TRICKLE_BYTES = 64
TRICKLE_PAUSE = 0.05
POLL = 0.05


def _readable(sock):
    """Waits up to POLL seconds for sock to have data (or its end) to read.

    The sockets stay blocking: a timeout on one would also cut short a send
    to it from the other direction's thread.
    """
    return bool(select.select([sock], [], [], POLL)[0])


def _reset(sock):
    """Closes sock with an RST instead of a FIN (SO_LINGER with a zero timeout)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class _Connection:
    def __init__(self, proxy, client, server):
        self.proxy = proxy
        self.client = client
        self.server = server
        self.lock = threading.Lock()
        self.closed = False
        self.stalled = False  # silent for good: nothing is forwarded or closed towards the client
        self.cut_armed_at = None

    def reset(self):
        with self.lock:
            if self.closed:
                return
            self.closed = True
        _reset(self.client)
        _reset(self.server)

    def close_quietly(self):
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for sock in (self.client, self.server):
            try:
                sock.close()
            except OSError:
                pass

    def pump(self, source, destination, towards_client):
        """Forwards source -> destination until either end or a fault ends the connection."""
        while not self.closed:
            fault = self.proxy.fault
            if fault == "stall" or self.stalled:
                self.stalled = True
                if not self._drain_stalled(source, towards_client):
                    return
                continue
            if fault == "cut":
                now = time.monotonic()
                if self.cut_armed_at is None:
                    self.cut_armed_at = now
                elif now - self.cut_armed_at >= CUT_IDLE:
                    self.proxy.count("cut_idle")
                    self.reset()
                    return
            else:
                self.cut_armed_at = None
            try:
                if not _readable(source):
                    continue
                data = source.recv(65536)
            except (OSError, ValueError):  # ValueError: closed by the other direction's thread
                self.reset()
                return
            if not data:
                # An orderly end on one side is passed on as one (FIN).
                try:
                    destination.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            fault = self.proxy.fault
            try:
                if fault == "cut":
                    destination.sendall(data[: max(1, len(data) // 2)])
                    self.proxy.count("cut_mid_frame")
                    self.reset()
                    return
                if fault == "stall" or self.stalled:
                    self.stalled = True
                    continue  # dropped, as on a dead link
                if fault == "trickle":
                    self._trickle(destination, data)
                else:
                    destination.sendall(data)
            except OSError:
                self.reset()
                return

    def _trickle(self, destination, data):
        self.proxy.count("trickled_chunks")
        offset = 0
        while offset < len(data):
            if self.proxy.fault != "trickle":
                destination.sendall(data[offset:])
                return
            destination.sendall(data[offset:offset + TRICKLE_BYTES])
            offset += TRICKLE_BYTES
            time.sleep(TRICKLE_PAUSE)

    def _drain_stalled(self, source, towards_client):
        """Reads and drops what arrives on a stalled connection; False once it is over.

        The client's end is never closed from here: the client must notice by
        itself. When the client closes, the server side is closed too (the
        broker would time the connection out anyway); when the server closes,
        only the server side goes.
        """
        try:
            if not _readable(source):
                return True
            data = source.recv(65536)
        except (OSError, ValueError):
            data = b""
        if data:
            return True
        if towards_client:
            try:
                self.server.close()
            except OSError:
                pass
            return False
        self.close_quietly()
        return False


class FaultProxy:
    """Forwards 127.0.0.1:port to target; set_fault() switches a fault on or off."""

    def __init__(self, target_host, target_port, listen_port=0):
        self.target = (target_host, target_port)
        self.fault = None
        self.counters = {"connections": 0}
        self._connections = []
        self._lock = threading.Lock()
        self._listener = None
        self._stopped = False
        self.port = self._listen(listen_port)

    def count(self, key, n=1):
        with self._lock:
            self.counters[key] = self.counters.get(key, 0) + n

    def _listen(self, port):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept_loop, args=(listener,), daemon=True).start()
        return listener.getsockname()[1]

    def _stop_listening(self):
        # shutdown() first: on Linux it wakes the thread blocked in accept()
        # and ends the listen; close() alone would leave the port accepting
        # while that thread holds the socket.
        for step in (lambda: self._listener.shutdown(socket.SHUT_RDWR), self._listener.close):
            try:
                step()
            except OSError:
                pass

    def _accept_loop(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed: the refuse fault, or close()
            self.count("connections")
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                self.count("target_unreachable")
                _reset(client)
                continue
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection = _Connection(self, client, server)
            with self._lock:
                self._connections = [c for c in self._connections if not c.closed]
                self._connections.append(connection)
            threading.Thread(target=connection.pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=connection.pump, args=(server, client, True), daemon=True).start()

    def set_fault(self, fault):
        """Switches to fault (one of FAULTS) or back to plain forwarding (None)."""
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
        previous = self.fault
        self.fault = fault
        if fault == "refuse" and previous != "refuse":
            self._stop_listening()
            with self._lock:
                connections = list(self._connections)
            for connection in connections:
                connection.reset()
            self.count("refused_periods")
        elif previous == "refuse" and fault != "refuse" and not self._stopped:
            # The same port again: the clients' URLs name it.
            self._listen(self.port)

    def close(self):
        self._stopped = True
        self.fault = None
        self._stop_listening()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.close_quietly()


def _address(text):
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", required=True, type=_address, help="HOST:PORT of the broker")
    parser.add_argument("--listen", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--fault", action="append", default=[], metavar="KIND:SECONDS",
                        help="a step of the cycle: a fault or 'none', for SECONDS")
    args = parser.parse_args()
    proxy = FaultProxy(args.target[0], args.target[1], args.listen)
    print(f"127.0.0.1:{proxy.port} -> {args.target[0]}:{args.target[1]}", flush=True)
    steps = [(kind, float(seconds)) for kind, _, seconds in (f.partition(":") for f in args.fault)]
    try:
        while True:
            for kind, seconds in steps or [("none", 3600)]:
                proxy.set_fault(None if kind == "none" else kind)
                print(f"fault {kind} for {seconds:g} s", file=sys.stderr, flush=True)
                time.sleep(seconds)
    except KeyboardInterrupt:
        pass
    proxy.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

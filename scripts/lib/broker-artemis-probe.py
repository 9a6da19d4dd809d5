#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Readiness probe of `scripts/broker artemis`: one real AMQP 1.0 connection.

    broker-artemis-probe.py HOST PORT [--ca FILE] [--user USER --password PASS]

Speaks the protocol itself (standard library only, so no client library has to
be installed before the broker can be started): SASL header and mechanisms,
sasl-init (PLAIN with the given user, else ANONYMOUS) answered by an ok
outcome, then the AMQP header and an open frame answered by the broker's own
open, then close. With --ca the connection is TLS, verified against that CA
and the name HOST. Exit status 0 when all of that happened, 1 otherwise (the
reason on stderr).
"""

import argparse
import socket
import ssl
import struct
import sys

SASL_HEADER = b"AMQP\x03\x01\x00\x00"
AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
FRAME_AMQP = 0
FRAME_SASL = 1
# Descriptor codes of the performatives the probe sends or expects.
SASL_MECHANISMS = 0x40
SASL_INIT = 0x41
SASL_OUTCOME = 0x44
OPEN = 0x10
CLOSE = 0x18


class ProbeError(Exception):
    pass


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ProbeError("connection closed by the broker")
        data += chunk
    return data


def read_frame(sock):
    """The next non-empty frame as (frame type, performative code, body)."""
    while True:
        size = struct.unpack(">I", recv_exact(sock, 4))[0]
        if size < 8 or size > 1 << 20:
            raise ProbeError(f"implausible frame size {size}")
        rest = recv_exact(sock, size - 4)
        doff, frame_type = rest[0], rest[1]
        body = rest[doff * 4 - 4 :]
        if not body:
            continue  # an empty frame is a heartbeat
        if body[0] != 0x00:
            raise ProbeError(f"frame body is not a described type: {body[:8].hex()}")
        if body[1] == 0x53:  # smallulong descriptor
            return frame_type, body[2], body[3:]
        if body[1] == 0x80:  # ulong descriptor
            return frame_type, struct.unpack(">Q", body[2:10])[0], body[10:]
        raise ProbeError(f"unexpected descriptor encoding 0x{body[1]:02x}")


def frame(frame_type, code, fields):
    """A frame holding the performative `code` with the encoded list `fields`."""
    if len(fields) + 1 > 255:
        raise ProbeError("performative too long for a list8")
    body = bytes([0x00, 0x53, code, 0xC0, len(fields) + 1, count_fields(fields)]) + fields
    return struct.pack(">IBBH", 8 + len(body), 2, frame_type, 0) + body


def count_fields(fields):
    # The probe encodes only symbols (0xa3), binaries (0xa0) and strings
    # (0xa1), each with a one-byte length.
    n = i = 0
    while i < len(fields):
        i += 2 + fields[i + 1]
        n += 1
    return n


def short_value(constructor, value):
    if len(value) > 255:
        raise ProbeError("value too long for the probe's encoding")
    return bytes([constructor, len(value)]) + value


def expect(sock, frame_type, code, what):
    got_type, got_code, rest = read_frame(sock)
    if got_type != frame_type or got_code != code:
        raise ProbeError(f"expected {what}, got frame type {got_type} performative 0x{got_code:02x}")
    return rest


def sasl_outcome_code(rest):
    # sasl-outcome is a list whose first field, the code, is a ubyte (0x50).
    if rest[:1] == b"\xc0" and rest[3:4] == b"\x50":
        return rest[4]
    if rest[:1] == b"\xd0" and rest[9:10] == b"\x50":
        return rest[10]
    raise ProbeError(f"cannot read the sasl-outcome code: {rest[:12].hex()}")


def probe(sock, user, password):
    sock.sendall(SASL_HEADER)
    header = recv_exact(sock, 8)
    if header != SASL_HEADER:
        raise ProbeError(f"broker answered the SASL header with {header!r}")
    mechanisms = expect(sock, FRAME_SASL, SASL_MECHANISMS, "sasl-mechanisms")
    if user is not None:
        mechanism = b"PLAIN"
        init = short_value(0xA3, mechanism) + short_value(0xA0, b"\0" + user.encode() + b"\0" + password.encode())
    else:
        mechanism = b"ANONYMOUS"
        init = short_value(0xA3, mechanism)
    if mechanism not in mechanisms:
        raise ProbeError(f"broker does not offer SASL {mechanism.decode()}")
    sock.sendall(frame(FRAME_SASL, SASL_INIT, init))
    code = sasl_outcome_code(expect(sock, FRAME_SASL, SASL_OUTCOME, "sasl-outcome"))
    if code != 0:
        raise ProbeError(f"SASL {mechanism.decode()} refused (outcome code {code})")

    sock.sendall(AMQP_HEADER)
    header = recv_exact(sock, 8)
    if header != AMQP_HEADER:
        raise ProbeError(f"broker answered the AMQP header with {header!r}")
    sock.sendall(frame(FRAME_AMQP, OPEN, short_value(0xA1, b"babelqueue-broker-probe")))
    expect(sock, FRAME_AMQP, OPEN, "open")
    sock.sendall(struct.pack(">IBBH", 12, 2, FRAME_AMQP, 0) + bytes([0x00, 0x53, CLOSE, 0x45]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--ca", help="CA file: connect with TLS and verify the broker against it")
    parser.add_argument("--user")
    parser.add_argument("--password", default="")
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args()
    try:
        sock = socket.create_connection((args.host, args.port), timeout=args.timeout)
        if args.ca:
            context = ssl.create_default_context(cafile=args.ca)
            sock = context.wrap_socket(sock, server_hostname=args.host)
        with sock:
            probe(sock, args.user, args.password)
    except (OSError, ProbeError) as error:
        print(f"artemis probe {args.host}:{args.port}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

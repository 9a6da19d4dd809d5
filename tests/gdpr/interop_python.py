#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Field encryption across languages: the pinned Python SDK's babelqueue.gdpr
with an AES-GCM cipher on the `cryptography` package, built the way that
SDK's documentation describes (random 12-byte nonce prepended, no associated
data, standard base64), against `babelqueue gdpr protect|unprotect`.

  1. Python protects, C++ unprotects: the cleartext comes back exactly.
  2. C++ protects, Python unprotects: the same; the ciphertext has the
     family's layout (nonce 12 + ciphertext + tag 16 bytes).
  3. A wrong key and a changed byte: the C++ side fails (exit 1), prints no
     envelope; a key ring whose second key is the writer's opens it.

Marks of every kind: a leaf, a nested leaf, an array fan-out, a container.

usage: interop_python.py BABELQUEUE_BINARY
"""
import base64
import copy
import json
import os
import subprocess
import sys
import tempfile

from babelqueue import EnvelopeCodec
from babelqueue.gdpr import protect, unprotect
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

URN = "urn:shop:customers:registered"
SCHEMA = {
    "type": "object",
    "properties": {
        "customer_id": {"type": "integer"},
        "email": {"type": "string", "x-gdpr-sensitive": "contact"},
        "profile": {"type": "object", "properties": {"full_name": {"type": "string", "x-gdpr-sensitive": True},
                                                     "tier": {"type": "string"}}},
        "addresses": {"type": "array", "items": {"type": "object", "properties": {
            "line": {"type": "string", "x-gdpr-sensitive": True}, "country": {"type": "string"}}}},
        "card": {"type": "object", "x-gdpr-sensitive": "payment"},
    },
}
DATA = {
    "customer_id": 7,
    "email": "alice@example.com",
    "profile": {"full_name": "Alice \u00dcnal \u2615", "tier": "gold"},
    "addresses": [{"line": "Main St 1", "country": "DE"}, {"country": "TR"}, {"line": "Side Rd 2", "country": "FR"}],
    "card": {"pan": "4111111111111111", "exp": [12, 2030], "holder": {"name": "A. \u00dcnal"}},
    "amount": 1234.5,
}
SECRETS = ["alice@example.com", "Main St 1", "Side Rd 2", "4111111111111111"]


class AesGcm:
    """The cipher the Python SDK leaves to its users, in the family's format."""

    def __init__(self, key):
        self._aead = AESGCM(key)

    def encrypt(self, plaintext):
        nonce = os.urandom(12)
        return base64.b64encode(nonce + self._aead.encrypt(nonce, plaintext, None)).decode("ascii")

    def decrypt(self, text):
        raw = base64.b64decode(text, validate=True)
        return self._aead.decrypt(raw[:12], raw[12:], None)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    binary = sys.argv[1]
    key, other = os.urandom(32), os.urandom(32)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "customers.schema.json"), "w") as f:
            json.dump(SCHEMA, f)
        with open(os.path.join(tmp, "registry.json"), "w") as f:
            json.dump({"schemas": [{"urn": URN, "schema": "customers.schema.json"}]}, f)
        keys = {}
        for name, lines in {"key": [key], "other": [other], "ring": [other, key]}.items():
            keys[name] = os.path.join(tmp, name + ".keys")
            with open(keys[name], "w") as f:
                f.write("".join(base64.b64encode(k).decode() + "\n" for k in lines))

        def cli(verb, key_file, body):
            return subprocess.run([binary, "gdpr", verb, "--registry", tmp, "--key-file", key_file],
                                  input=body, capture_output=True, text=True, timeout=60)

        # 1. Python protects, C++ unprotects.
        env = EnvelopeCodec.make(URN, copy.deepcopy(DATA), queue="customers")
        protect(env["data"], SCHEMA, AesGcm(key))
        body = EnvelopeCodec.encode(env)
        if any(s in body for s in SECRETS):
            fail("the Python side left cleartext in " + body)
        out = cli("unprotect", keys["key"], body)
        if out.returncode != 0:
            fail("C++ unprotect of Python's envelope: " + out.stderr)
        got = json.loads(out.stdout)
        if got["data"] != DATA:
            fail("C++ decrypted %r, expected %r" % (got["data"], DATA))
        for field in ("job", "trace_id", "meta", "attempts"):
            if got[field] != env[field]:
                fail("unprotect changed " + field)
        print("ok: Python protect -> C++ unprotect (leaf, nested, array fan-out, container)")

        # 2. C++ protects, Python unprotects.
        made = subprocess.run([binary, "codec", "encode", URN, json.dumps(DATA), "--queue", "customers"],
                              capture_output=True, text=True, timeout=60, check=True).stdout
        out = cli("protect", keys["key"], made)
        if out.returncode != 0:
            fail("C++ protect: " + out.stderr)
        sealed = EnvelopeCodec.decode(out.stdout.strip())
        if any(s in out.stdout for s in SECRETS):
            fail("the C++ side left cleartext in " + out.stdout)
        raw = base64.b64decode(sealed["data"]["email"], validate=True)
        if len(raw) != 12 + len(b'"alice@example.com"') + 16:
            fail("the ciphertext is not nonce + ciphertext + tag: %d bytes" % len(raw))
        original = json.loads(made)
        for field in ("job", "trace_id", "meta", "attempts"):
            if sealed[field] != original[field]:
                fail("protect changed " + field)
        unprotect(sealed["data"], SCHEMA, AesGcm(key))
        if sealed["data"] != DATA:
            fail("Python decrypted %r, expected %r" % (sealed["data"], DATA))
        print("ok: C++ protect -> Python unprotect (leaf, nested, array fan-out, container)")

        # 3. A wrong key, a changed byte, a key ring.
        out = cli("unprotect", keys["other"], body)
        if out.returncode != 1 or out.stdout or "cannot decrypt" not in out.stderr:
            fail("a wrong key: exit %d, stdout %r, stderr %r" % (out.returncode, out.stdout, out.stderr))
        env = json.loads(body)
        sealed_email = base64.b64decode(env["data"]["email"])
        flipped = sealed_email[:20] + bytes([sealed_email[20] ^ 1]) + sealed_email[21:]
        env["data"]["email"] = base64.b64encode(flipped).decode()
        out = cli("unprotect", keys["key"], json.dumps(env))
        if out.returncode != 1 or out.stdout or "cannot decrypt data.email" not in out.stderr:
            fail("a changed byte: exit %d, stdout %r, stderr %r" % (out.returncode, out.stdout, out.stderr))
        out = cli("unprotect", keys["ring"], body)
        if out.returncode != 0 or json.loads(out.stdout)["data"] != DATA:
            fail("a key ring with the writer's key second: " + out.stderr)
        wrong = cli("unprotect", keys["other"], body)
        for k in (key, other):
            if base64.b64encode(k).decode() in out.stderr + out.stdout + wrong.stderr + wrong.stdout:
                fail("a key was printed")
        print("ok: a wrong key and a changed byte fail, a key ring opens, no key printed")


if __name__ == "__main__":
    main()

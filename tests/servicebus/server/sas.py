# SPDX-License-Identifier: Apache-2.0
"""Shared access signature tokens, checked as the service checks them.

A token reads

    SharedAccessSignature sr=<resource>&sig=<signature>&se=<expiry>&skn=<key name>

(in any order), every value URL-encoded. The signature is the base64 of
HMAC-SHA256, keyed with the UTF-8 bytes of the shared access key (the key
string itself, not its base64 decoding), over "<resource>\\n<expiry>", where
<resource> is the value exactly as it stands in the token, that is still
URL-encoded, and <expiry> is the decimal Unix time in seconds.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import Dict, Optional
from urllib.parse import quote_plus, unquote_plus, urlencode, urlsplit

PREFIX = "SharedAccessSignature "


class TokenRejected(Exception):
    """Why a token is refused; the text goes to the client (no secret in it)."""


@dataclass(frozen=True)
class Grant:
    """What an accepted token allows: entity paths under `scope` ('' is the whole namespace)
    until `expires_at` (Unix seconds)."""

    scope: str
    expires_at: int

    def covers(self, entity_path: str) -> bool:
        if not self.scope:
            return True
        path = entity_path.lower()
        return path == self.scope or path.startswith(self.scope + "/")


def resource_path(uri: str) -> str:
    """The entity path a resource or audience URI names, lower-case, without slashes at the
    ends: 'sb://host:5694/orders/' -> 'orders'; a bare path is taken as it is."""
    if "://" in uri:
        path = urlsplit(uri).path
    else:
        path = uri
    return path.strip("/").lower()


def _fields(token: str) -> Dict[str, str]:
    raw: Dict[str, str] = {}
    for part in token[len(PREFIX):].split("&"):
        if "=" not in part:
            raise TokenRejected("the SAS token is malformed (a field without '=')")
        name, value = part.split("=", 1)
        if name in raw:
            raise TokenRejected(f"the SAS token has the field '{name}' twice")
        raw[name] = value
    for name in ("sr", "sig", "se", "skn"):
        if name not in raw:
            raise TokenRejected(f"the SAS token has no '{name}' field")
    return raw


def verify(token: str, key_name: str, key: str, audience: Optional[str], now: float) -> Grant:
    """The grant of a valid token; TokenRejected with the reason otherwise."""
    if not token.startswith(PREFIX):
        raise TokenRejected("not a shared access signature token (only SAS tokens are accepted here)")
    raw = _fields(token)
    if unquote_plus(raw["skn"]) != key_name:
        raise TokenRejected("the SAS token names an unknown shared access key")
    try:
        expiry = int(raw["se"])
    except ValueError:
        raise TokenRejected("the SAS token's expiry is not a number") from None
    signed = f"{raw['sr']}\n{raw['se']}".encode("utf-8")
    expected = base64.b64encode(hmac.new(key.encode("utf-8"), signed, hashlib.sha256).digest())
    given = unquote_plus(raw["sig"]).encode("utf-8")
    if not hmac.compare_digest(expected, given):
        raise TokenRejected("the SAS token's signature does not match the shared access key")
    if expiry <= now:
        raise TokenRejected("the SAS token has expired")
    scope = resource_path(unquote_plus(raw["sr"]))
    if audience is not None:
        wanted = resource_path(audience)
        if not Grant(scope, expiry).covers(wanted):
            raise TokenRejected("the SAS token's resource does not cover the audience it was put for")
        # The token is put for an audience: it grants what the audience names.
        scope = wanted
    return Grant(scope, expiry)


def sign(resource: str, key_name: str, key: str, expiry: int) -> str:
    """A token as the service's own clients make it (used by the readiness probe)."""
    sr = quote_plus(resource)
    sig = base64.b64encode(hmac.new(key.encode("utf-8"), f"{sr}\n{expiry}".encode("utf-8"),
                                    hashlib.sha256).digest()).decode()
    return PREFIX + urlencode({"sr": resource, "sig": sig, "se": str(expiry), "skn": key_name})

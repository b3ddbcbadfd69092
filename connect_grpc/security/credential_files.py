"""The tokens file and the principals file: who may call, with which role.

Tokens file (``auth.tokens.file``), one token per line, hashes only::

    # hash                                                                   principal role
    sha256:4f1c0b6f2f3e9a7c0a5d8d6e3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a  ci-bot    admin

The worker never sees a token at rest: a caller's ``authorization: Bearer <token>`` is
hashed and compared (in constant time) with every line. Tokens are random secrets of at
least :data:`MIN_TOKEN_CHARS` characters (``connect-grpc auth new-token`` makes one), so an
unsalted SHA-256 cannot be reversed by guessing; salting protects low-entropy passwords,
which tokens are not.

Principals file (``auth.principals.file``), one certificate subject per line, role first
(subjects contain spaces and commas)::

    # role   subject, as gRPC reports it (RFC 2253 order: CN first)
    admin    CN=alice,O=Example
    viewer   CN=dashboard,O=Example

Blank lines and lines starting with ``#`` are ignored. Every malformed line is an
InvalidArgumentError naming the property, the file and the line.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.security.roles import CLIENT_ROLES, Role

HASH_PREFIX = "sha256:"
#: The shortest token accepted: 16 random characters from a 64-letter alphabet are 96 bits.
MIN_TOKEN_CHARS = 16
#: Bytes of randomness in a token ``new_token`` makes (256 bits).
NEW_TOKEN_BYTES = 32

_HASH = re.compile(r"sha256:[0-9a-f]{64}")
#: What a bearer token may contain: printable ASCII without spaces (an HTTP/2 header value).
_TOKEN = re.compile(r"[\x21-\x7e]+")
_ROLE_NAMES = ", ".join(role.value for role in CLIENT_ROLES)


def token_problem(token: str) -> str | None:
    """Why ``token`` cannot be a bearer token, or None when it can."""
    if not _TOKEN.fullmatch(token):
        return "a token is printable ASCII with no spaces"
    if len(token) < MIN_TOKEN_CHARS:
        return f"a token has at least {MIN_TOKEN_CHARS} characters, got {len(token)}"
    return None


def hash_token(token: str) -> str:
    """The tokens-file form of ``token``: ``sha256:<hex>``. Raises ValueError for a token
    that is too short or has characters a header cannot carry."""
    problem = token_problem(token)
    if problem is not None:
        raise ValueError(problem)
    return HASH_PREFIX + hashlib.sha256(token.encode("ascii")).hexdigest()


def new_token() -> str:
    """A fresh random token (URL-safe base64, 43 characters)."""
    return secrets.token_urlsafe(NEW_TOKEN_BYTES)


@dataclass(frozen=True, slots=True)
class TokenEntry:
    digest: bytes
    principal: str
    role: Role


@dataclass(frozen=True, slots=True)
class TokenTable:
    """The tokens file's entries."""

    entries: tuple[TokenEntry, ...] = ()

    def match(self, token: str) -> TokenEntry | None:
        """The entry of ``token``, or None. Compares with every entry, each in constant
        time, so the time taken tells nothing about which entry (if any) matched."""
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        found: TokenEntry | None = None
        for entry in self.entries:
            if hmac.compare_digest(entry.digest, digest):
                found = entry
        return found


    def by_digest(self, digest: bytes) -> TokenEntry | None:
        """The entry of the token with this SHA-256 (a caller another worker vouches for)."""
        return next((entry for entry in self.entries if entry.digest == digest), None)


def read_tokens(path: Path, property_name: str) -> TokenTable:
    """Parses a tokens file. Raises InvalidArgumentError naming ``property_name``."""
    entries: list[TokenEntry] = []
    seen: dict[bytes, int] = {}
    for number, line in _lines(path, property_name):
        fields = line.split()
        where = f"{path}:{number}"
        if len(fields) != 3:
            raise _bad(property_name, where, "expected '<sha256:hex> <principal> <role>'")
        hashed, principal, role_name = fields
        if not _HASH.fullmatch(hashed):
            raise _bad(
                property_name, where,
                "the first field must be sha256:<64 lowercase hex digits> (a token's hash, "
                "from connect-grpc auth hash-token), never the token itself",
            )
        role = Role.granted_by_file(role_name)
        if role is None:
            raise _bad(property_name, where, f"unknown role {role_name!r}; one of {_ROLE_NAMES}")
        digest = bytes.fromhex(hashed[len(HASH_PREFIX) :])
        if digest in seen:
            raise _bad(property_name, where, f"the same hash as line {seen[digest]}")
        seen[digest] = number
        entries.append(TokenEntry(digest, principal, role))
    return TokenTable(tuple(entries))


def read_principals(path: Path, property_name: str) -> Mapping[str, Role]:
    """Parses a principals file: certificate subject → role. Raises InvalidArgumentError
    naming ``property_name``."""
    roles: dict[str, Role] = {}
    lines: dict[str, int] = {}
    for number, line in _lines(path, property_name):
        where = f"{path}:{number}"
        role_name, *rest = line.split(maxsplit=1)
        subject = rest[0].strip() if rest else ""
        role = Role.granted_by_file(role_name)
        if role is None:
            raise _bad(
                property_name, where,
                f"expected '<role> <certificate subject>' with a role among {_ROLE_NAMES}, "
                f"got role {role_name!r}",
            )
        if not subject:
            raise _bad(property_name, where, "no certificate subject after the role")
        if subject in roles:
            raise _bad(property_name, where, f"{subject!r} is also on line {lines[subject]}")
        roles[subject] = role
        lines[subject] = number
    return MappingProxyType(roles)


def _lines(path: Path, property_name: str) -> list[tuple[int, str]]:
    """(line number, stripped line) of every line that is not blank or a comment."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InvalidArgumentError.for_field(
            property_name, f"cannot read {path}: {reason}"
        ) from None
    numbered = ((number, line.strip()) for number, line in enumerate(text.splitlines(), 1))
    return [(number, line) for number, line in numbered if line and not line.startswith("#")]


def _bad(property_name: str, where: str, problem: str) -> InvalidArgumentError:
    return InvalidArgumentError.for_field(property_name, f"{where}: {problem}")

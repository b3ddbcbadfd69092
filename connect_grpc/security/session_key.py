"""The inter-worker session key (Kafka Connect's KIP-507, for gRPC).

The leader generates a random key, writes it to the config topic under Kafka Connect's own
key and value format (``session-key`` → ``{"key": <base64>, "algorithm": "HmacSHA256",
"creation-timestamp": <ms>}``), in the same transaction that announces it as leader, and
writes a new one every ``inter.worker.key.ttl.ms``. Every worker reads it with the rest of
the topic.

A worker that calls another on a caller's behalf (a forwarded write, a plain restart sent
to the worker running the instance) or on its own (ClusterService) signs the call: an
HMAC-SHA256, under the current key, of the method, a SHA-256 of the request's bytes, the
time, the key's id (its creation timestamp), the forwarding worker's id and the caller's
credential (the SHA-256 of its token, its certificate's subject, or the worker itself;
never a secret). The receiving worker checks the signature with the keys it knows (the
current one and the one before it, so a rotation does not fail calls signed a moment
earlier), then applies *its own* policy to the credential the signature vouches for: the
role comes from its own tokens or principals file, never from the forwarding worker. A
call that claims to be forwarded without a valid signature is refused (UNAUTHENTICATED),
whoever sends it.

Like Kafka Connect's, the key is only as secret as the config topic: protect that topic
with Kafka ACLs. A signature is accepted for :data:`MAX_CLOCK_SKEW_MS` either side of its
time; within that window a captured call could be replayed by someone who can read the
traffic, which TLS between workers prevents.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from connect_grpc.kernel.errors import UnauthenticatedError, UnavailableError

ALGORITHM = "HmacSHA256"
KEY_BYTES = 32
#: ``inter.worker.key.ttl.ms`` by default (Kafka Connect's: one hour).
DEFAULT_TTL_MS = 3_600_000
#: How far a signature's time may be from the receiver's clock.
MAX_CLOCK_SKEW_MS = 300_000

#: Metadata of a signed call: ``v1 <key id> <time ms> <hex HMAC>``.
SIGNATURE_HEADER = "x-connect-signature"
#: Metadata of a signed call: the credential of the caller it vouches for (UTF-8).
CREDENTIAL_HEADER = "x-connect-credential-bin"
_VERSION = "v1"

#: ErrorInfo reasons of a refused signature. Only the first is worth a retry: the
#: receiver has not read the key yet, or the sender has not read the new one yet.
SESSION_KEY_UNKNOWN = "SESSION_KEY_UNKNOWN"
SIGNATURE_INVALID = "SIGNATURE_INVALID"

Metadata = Sequence[tuple[str, str | bytes]]


@dataclass(frozen=True, slots=True)
class SessionKey:
    """One session key; its creation timestamp is its id."""

    secret: bytes = field(repr=False)
    created_ms: int

    @classmethod
    def generate(cls, now_ms: int) -> SessionKey:
        return cls(secrets.token_bytes(KEY_BYTES), now_ms)

    def expired(self, now_ms: int, ttl_ms: int) -> bool:
        return now_ms - self.created_ms >= ttl_ms

    def to_json(self) -> dict[str, Any]:
        return {
            "key": base64.b64encode(self.secret).decode("ascii"),
            "algorithm": ALGORITHM,
            "creation-timestamp": self.created_ms,
        }

    @classmethod
    def from_json(cls, value: Any) -> SessionKey | None:
        """None when ``value`` is not a usable session key record."""
        if not isinstance(value, dict) or value.get("algorithm") != ALGORITHM:
            return None
        encoded, created = value.get("key"), value.get("creation-timestamp")
        if not isinstance(encoded, str) or not isinstance(created, int) or isinstance(
            created, bool
        ):
            return None
        try:
            secret = base64.b64decode(encoded, validate=True)
        except ValueError:
            return None
        return cls(secret, created) if secret else None


@dataclass(frozen=True, slots=True)
class SignedCall:
    """What a signature covers besides the key and the time."""

    method: str
    body: bytes
    forwarded_by: str
    #: The caller's credential (``roles.Caller.credential``).
    credential: str


class NoSessionKeyError(UnavailableError):
    """This worker has not read a session key yet, so it cannot sign: retry shortly."""

    reason = "NO_SESSION_KEY"


class SessionKeyUnknownError(UnauthenticatedError):
    """Signed with a key the receiver does not know (yet, or any more)."""

    reason = SESSION_KEY_UNKNOWN


class SignatureInvalidError(UnauthenticatedError):
    """A missing, malformed, wrong or out-of-date signature."""

    reason = SIGNATURE_INVALID


def _now_ms() -> int:
    return int(time.time() * 1000)


#: What ``json.dumps(..., separators=(",", ":"))`` builds for every call, built once.
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))


def _mac(key: SessionKey, call: SignedCall, at_ms: int) -> str:
    payload = _COMPACT_JSON.encode(
        [
            _VERSION,
            call.method,
            hashlib.sha256(call.body).hexdigest(),
            at_ms,
            key.created_ms,
            call.forwarded_by,
            call.credential,
        ]
    ).encode("utf-8")
    return hmac.digest(key.secret, payload, "sha256").hex()


class RequestSigner:
    """Signs this worker's calls to other workers with the current session key."""

    def __init__(
        self, current_key: Callable[[], SessionKey | None], clock: Callable[[], int] = _now_ms
    ) -> None:
        self._current_key = current_key
        self._clock = clock

    def metadata(self, call: SignedCall) -> tuple[tuple[str, str | bytes], ...]:
        """The metadata to add to ``call``. Raises NoSessionKeyError before the worker has
        read a key."""
        key = self._current_key()
        if key is None:
            raise NoSessionKeyError(
                "this worker has not read the cluster's session key yet; retry", 0.2
            )
        at_ms = self._clock()
        return (
            (SIGNATURE_HEADER, f"{_VERSION} {key.created_ms} {at_ms} {_mac(key, call, at_ms)}"),
            (CREDENTIAL_HEADER, call.credential.encode("utf-8")),
        )


class RequestVerifier:
    """Checks the signature of a call from another worker."""

    def __init__(
        self,
        known_keys: Callable[[], Sequence[SessionKey]],
        clock: Callable[[], int] = _now_ms,
        max_skew_ms: int = MAX_CLOCK_SKEW_MS,
    ) -> None:
        self._known_keys = known_keys
        self._clock = clock
        self._max_skew_ms = max_skew_ms

    def verify(self, method: str, body: bytes, forwarded_by: str, metadata: Metadata) -> str:
        """The credential of the caller the call's signature vouches for.

        Raises:
            SessionKeyUnknownError: signed with a key this worker does not know.
            SignatureInvalidError: no signature, a malformed one, or one that does not match.
        """
        key_id, at_ms, mac = _signature(metadata)
        credential = _credential(metadata)
        key = next((k for k in self._known_keys() if k.created_ms == key_id), None)
        if key is None:
            raise SessionKeyUnknownError(
                f"the call is signed with session key {key_id}, which this worker does not "
                "know; retry once both workers have read the config topic"
            )
        expected = _mac(key, SignedCall(method, body, forwarded_by, credential), at_ms)
        if not hmac.compare_digest(expected, mac):
            raise SignatureInvalidError("the call's worker signature does not match")
        if abs(self._clock() - at_ms) > self._max_skew_ms:
            raise SignatureInvalidError(
                f"the call's worker signature is from {at_ms} ms since the epoch, more than "
                f"{self._max_skew_ms} ms from this worker's clock"
            )
        return credential


def _header(metadata: Metadata, name: str) -> str | bytes | None:
    return next((value for key, value in metadata if key == name), None)


def _signature(metadata: Metadata) -> tuple[int, int, str]:
    raw = _header(metadata, SIGNATURE_HEADER)
    if raw is None:
        raise SignatureInvalidError(
            "the call claims to come from another worker but carries no worker signature"
        )
    fields = (raw.decode("ascii", "replace") if isinstance(raw, bytes) else raw).split(" ")
    if len(fields) != 4 or fields[0] != _VERSION or not all(f.isdigit() for f in fields[1:3]):
        raise SignatureInvalidError("the call's worker signature is malformed")
    return int(fields[1]), int(fields[2]), fields[3]


def _credential(metadata: Metadata) -> str:
    raw = _header(metadata, CREDENTIAL_HEADER)
    if raw is None:
        raise SignatureInvalidError("the call's worker signature vouches for no caller")
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


class KeyRing:
    """The current session key and the one it replaced, as this worker read them: a call
    signed just before a rotation, by a worker that had not read the new key yet, still
    verifies. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: SessionKey | None = None
        self._previous: SessionKey | None = None

    def observe(self, key: SessionKey | None) -> None:
        """Notes the key the config topic shows now (None: none yet)."""
        with self._lock:
            if key is None or key == self._current:
                return
            self._previous, self._current = self._current, key

    def current(self) -> SessionKey | None:
        with self._lock:
            return self._current

    def known(self) -> tuple[SessionKey, ...]:
        """The keys a signature may be made with, newest first."""
        with self._lock:
            return tuple(key for key in (self._current, self._previous) if key is not None)

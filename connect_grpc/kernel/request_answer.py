"""The answer to the request being carried out, for a store that writes it with the change.

A mutation carrying a ``request_id`` applies once, and a retry gets the first answer
(``api.idempotency``). Where the change is one transaction on a log (the config topic in
distributed mode), the answer belongs in that same transaction: then no crash can leave
the change written without its answer, and a retry that reaches a new leader after a
failover still finds it.

The API layer opens a :func:`scope` naming the request and how to encode the herder's
result as the RPC's answer; a herder that can, asks :func:`take` for the answer to write
with its change, just before it writes. No gRPC here: a contextvar, as ``deadline`` is.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class PendingAnswer:
    """A request being carried out: what a retry must be answered with, once known."""

    request_id: str
    fingerprint: bytes
    stored_at: float
    encode: Callable[[Any], bytes]
    #: The encoded answer, once a store took it to write with the change.
    taken: bytes | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """What to store under the request id, in the change's own transaction."""

    request_id: str
    fingerprint: bytes
    stored_at: float
    payload: bytes


_pending: contextvars.ContextVar[PendingAnswer | None] = contextvars.ContextVar(
    "connect_grpc_pending_answer", default=None
)


@contextlib.contextmanager
def scope(pending: PendingAnswer) -> Iterator[PendingAnswer]:
    """Within the block, :func:`take` returns ``pending``'s answer."""
    token = _pending.set(pending)
    try:
        yield pending
    finally:
        _pending.reset(token)


def pending() -> bool:
    """Whether a request id is being carried out: its answer is to be written with the
    change, by whichever store replays answers to every worker."""
    return _pending.get() is not None


def take(result: object) -> Answer | None:
    """The answer to write with the change whose outcome is ``result``; None when no
    request id is being carried out. The caller must write it in the change's transaction
    (or fail the call): the request log then does not store it again."""
    pending = _pending.get()
    if pending is None:
        return None
    pending.taken = pending.encode(result)
    return Answer(pending.request_id, pending.fingerprint, pending.stored_at, pending.taken)

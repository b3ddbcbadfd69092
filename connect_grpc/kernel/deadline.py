"""The caller's deadline, carried from the API edge to every wait on Kafka or a lock.

The API layer opens a ``Deadline`` scope per call (from the gRPC deadline); code further
down asks ``remaining()`` how long it may still wait, so no wait outlives the caller. Code
that runs outside any call (connector files at start-up, background threads) gets
``DEFAULT_WAIT_S``. No gRPC here: a contextvar, like a Go ``context.Context`` deadline.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

#: How long a wait may take when no caller set a deadline.
DEFAULT_WAIT_S = 30.0
#: Kept back from the caller's deadline so that our answer (UNAVAILABLE) reaches it before
#: its own DEADLINE_EXCEEDED does.
ANSWER_MARGIN_S = 0.25

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "connect_grpc_deadline", default=None
)


@contextlib.contextmanager
def scope(timeout_seconds: float | None) -> Iterator[None]:
    """Within the block, waits end ``timeout_seconds`` from now (None: the default)."""
    at = None if timeout_seconds is None else time.monotonic() + timeout_seconds
    token = _deadline.set(at)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining(cap: float = DEFAULT_WAIT_S) -> float:
    """Seconds a wait may still take: the caller's remaining time less a margin to answer
    in, at most ``cap``, never negative."""
    at = _deadline.get()
    if at is None:
        return cap
    return max(0.0, min(cap, at - time.monotonic() - ANSWER_MARGIN_S))


def expired() -> bool:
    return remaining() <= 0.0

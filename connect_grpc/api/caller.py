"""The caller of the call being served, for code that acts on its behalf (forwarding).

:class:`~connect_grpc.api.auth.AuthInterceptor` sets it around each unary call it admits,
on the handler's thread; it is unset outside a call and on a server without that
interceptor.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from connect_grpc.security.roles import Caller

_CALLER: ContextVar[Caller] = ContextVar("connect_grpc_caller")


def current_caller() -> Caller | None:
    """Who the call being served on this thread is from; None when unknown."""
    return _CALLER.get(None)


@contextmanager
def acting_for(caller: Caller) -> Iterator[None]:
    """Makes ``caller`` the current caller for the duration of the block."""
    token = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(token)

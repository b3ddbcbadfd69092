"""The typed client's channel handling, which every RPC of it goes through: the channel
(made from an address or settings and closed with the client, or the caller's own, left
open), the client's lifecycle, and the unary call with its deadline, its retries of an
UNAVAILABLE answer that carries a retry delay, and the mapping of a failed call's status
to the domain exception.

Separate from the RPCs themselves (:mod:`._connectors`, :mod:`._offsets`,
:mod:`._cluster`), which only build requests and convert answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self, TypeVar

import grpc

from connect_grpc.client import convert as cc
from connect_grpc.client.connection import ConnectionSettings
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

R = TypeVar("R")

#: The smallest per-attempt deadline, so that a retry never sends a deadline of zero.
_MIN_TIMEOUT = 0.001


def _repeatable(request: Any) -> bool:
    """Whether sending ``request`` twice is safe: a read (no ``request_id`` field), or a
    mutation whose ``request_id`` makes the server answer a repeat with the first answer."""
    field = request.DESCRIPTOR.fields_by_name.get("request_id")
    return field is None or bool(request.request_id)


class ChannelClient:
    """The channel, the lifecycle and the unary call of
    :class:`~connect_grpc.client.ConnectClient` (whose docstring says what the arguments
    mean)."""

    def __init__(
        self,
        target: str | ConnectionSettings | grpc.Channel,
        *,
        timeout: float = 30.0,
        retry_unavailable: bool = False,
    ) -> None:
        if isinstance(target, str):
            target = ConnectionSettings(target)
        if isinstance(target, ConnectionSettings):
            self._channel: grpc.Channel = target.channel()
            self._owns_channel = True
            self._tls: bool | None = target.tls is not None
        else:
            self._channel = target
            self._owns_channel = False
            self._tls = None
        self._stub = pb_grpc.ConnectServiceStub(self._channel)
        self.timeout = timeout
        self.retry_unavailable = retry_unavailable

    # lifecycle

    def close(self) -> None:
        """Closes the channel if the client created it. Idempotent."""
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call(self, rpc: Callable[..., Any], request: Any, convert: Callable[[Any], R]) -> R:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                response = rpc(request, timeout=max(deadline - time.monotonic(), _MIN_TIMEOUT))
            except grpc.RpcError as error:
                delay = self._retry_delay(error, request, deadline)
                if delay is None:
                    raise cc.error_from_rpc_error(error, tls=self._tls) from error
                time.sleep(delay)
                continue
            return convert(response)

    def _retry_delay(self, error: grpc.RpcError, request: Any, deadline: float) -> float | None:
        """How long to wait before calling again; None: do not (see ``retry_unavailable``)."""
        if not self.retry_unavailable or not _repeatable(request):
            return None
        delay = cc.server_retry_delay(error)
        if delay is None or time.monotonic() + delay >= deadline:
            return None
        return delay

"""Long-lived gRPC channels from this worker to the other workers, one per address.

Separate from forwarding (:mod:`.forwarding`), which sends the leader's writes over them:
the cluster service's calls to the leader (:mod:`.cluster_service`) use the same pool.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from connect_grpc.api.tls import PeerCredentials

#: Channel options for worker-to-worker channels: a restarted leader at the same address is
#: reached again within about a second (gRPC's default reconnect back-off grows to 2 min).
CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)


@dataclass(frozen=True, slots=True)
class MethodCall:
    """A method and how its messages cross the wire (None: as bytes, untouched)."""

    method: str
    serializer: Callable[[Any], bytes] | None
    deserializer: Callable[[bytes], Any] | None


class ChannelPool:
    """One long-lived channel per worker address, created on first use, closed once.

    With ``credentials`` (a TLS listener) the channels use TLS; when the certificate files
    change, the next call to an address gets a new channel (the old one is closed with the
    pool, so that calls still on it finish).
    """

    def __init__(
        self,
        options: Sequence[tuple[str, Any]] = CHANNEL_OPTIONS,
        credentials: PeerCredentials | None = None,
    ) -> None:
        self._options = list(options)
        self._credentials = credentials
        self._channels: dict[str, tuple[int, grpc.Channel]] = {}
        self._retired: list[grpc.Channel] = []
        self._callables: dict[tuple[str, MethodCall], grpc.UnaryUnaryMultiCallable[Any, Any]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def get(self, address: str) -> grpc.Channel | None:
        """The channel to ``address``; None once the pool is closed."""
        version, credentials = (
            (0, None) if self._credentials is None else self._credentials.current()
        )
        with self._lock:
            if self._closed:
                return None
            known = self._channels.get(address)
            if known is not None and known[0] == version:
                return known[1]
            if known is not None:
                self._retired.append(known[1])
                self._callables = {k: v for k, v in self._callables.items() if k[0] != address}
            channel = (
                grpc.insecure_channel(address, options=self._options)
                if credentials is None
                else grpc.secure_channel(address, credentials, options=self._options)
            )
            self._channels[address] = (version, channel)
            return channel

    def callable(
        self, address: str, call: MethodCall
    ) -> grpc.UnaryUnaryMultiCallable[Any, Any] | None:
        """The multi-callable of ``call`` on the channel to ``address``, built once (building
        one per call costs about as much as a small call); None once the pool is closed."""
        key = (address, call)
        channel = self.get(address)
        if channel is None:
            return None
        stub = self._callables.get(key)
        if stub is not None:
            return stub
        stub = channel.unary_unary(
            call.method,
            request_serializer=call.serializer,
            response_deserializer=call.deserializer,
        )
        with self._lock:
            if self._closed:
                return None
            return self._callables.setdefault(key, stub)

    def close(self) -> None:
        """Closes every channel. Idempotent."""
        with self._lock:
            self._closed = True
            self._callables.clear()
            channels = [channel for _, channel in self._channels.values()] + self._retired
            self._channels, self._retired = {}, []
        for channel in channels:
            channel.close()

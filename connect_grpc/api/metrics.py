"""gRPC server metrics: per method, calls started, calls handled by status code, and a
latency histogram, for unary and streaming calls alike.

Names and labels are those of the gRPC ecosystem's Prometheus servers (go-grpc-prometheus,
py-grpc-prometheus): ``grpc_server_started_total``, ``grpc_server_handled_total`` and
``grpc_server_handling_seconds``, labelled ``grpc_type``, ``grpc_service``,
``grpc_method`` (and ``grpc_code``, the status code's name: ``OK``, ``NOT_FOUND``, …), so
existing dashboards work. A stream's latency runs until its last message. Methods the server
does not implement are not counted (their names come from the caller).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, Counter, Histogram

from connect_grpc.api.handler_cache import WrappedHandlers

METHOD_LABELS = ("grpc_type", "grpc_service", "grpc_method")

UNARY = "unary"
SERVER_STREAM = "server_stream"
CLIENT_STREAM = "client_stream"
BIDI_STREAM = "bidi_stream"

#: Seconds: a local read takes about a millisecond, a forwarded write a few, a call that
#: waits for a rebalance or a stream up to minutes.
LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
)


class ServerMetricFamilies:
    """The gRPC server's families, in ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.started = Counter(
            "grpc_server_started_total",
            "RPCs started on the server.",
            METHOD_LABELS,
            registry=registry,
        )
        self.handled = Counter(
            "grpc_server_handled_total",
            "RPCs completed on the server, by status code.",
            (*METHOD_LABELS, "grpc_code"),
            registry=registry,
        )
        self.latency = Histogram(
            "grpc_server_handling_seconds",
            "Time from the start of an RPC to its status (a stream's: its last message).",
            METHOD_LABELS,
            registry=registry,
            buckets=LATENCY_BUCKETS,
        )


class _CallMetrics:
    """The series of one method."""

    def __init__(self, families: ServerMetricFamilies, rpc_type: str, full_method: str) -> None:
        service, _, method = full_method.lstrip("/").rpartition("/")
        labels = (rpc_type, service, method)
        self._families = families
        self._labels = labels
        self._latency = families.latency.labels(*labels)
        self._started = families.started.labels(*labels)
        self._handled: dict[grpc.StatusCode, Any] = {}

    def started(self) -> float:
        self._started.inc()
        return time.monotonic()

    def handled(self, began: float, code: grpc.StatusCode) -> None:
        self._latency.observe(time.monotonic() - began)
        handled = self._handled.get(code)
        if handled is None:
            handled = self._handled[code] = self._families.handled.labels(
                *self._labels, code.name
            )
        handled.inc()


def status_code(context: grpc.ServicerContext, error: BaseException | None) -> grpc.StatusCode:
    """The code the call ends with, as grpcio decides it: the one the servicer set or
    aborted with; else CANCELLED if the client went away, UNKNOWN if the servicer raised,
    OK otherwise."""
    code: grpc.StatusCode | None = getattr(context, "code", lambda: None)()
    if code is not None:
        return code
    if not context.is_active():
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.OK if error is None else grpc.StatusCode.UNKNOWN


class ServerMetricsInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Counts and times every call the server handles. Registered first, so that it also
    sees the calls other interceptors answer (a follower's relay of leader writes)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._families = ServerMetricFamilies(registry)
        # built once per handler, not per call: the label lookups take a lock each
        self._measuring = WrappedHandlers(self._measured)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        return self._measuring.of(handler_call_details.method, handler)

    def _measured(self, handler: Any, method: str) -> Any:
        serialization = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary is not None:
            calls = _CallMetrics(self._families, UNARY, method)
            return grpc.unary_unary_rpc_method_handler(
                _single(handler.unary_unary, calls), **serialization
            )
        if handler.unary_stream is not None:
            calls = _CallMetrics(self._families, SERVER_STREAM, method)
            return grpc.unary_stream_rpc_method_handler(
                _streamed(handler.unary_stream, calls), **serialization
            )
        if handler.stream_unary is not None:
            calls = _CallMetrics(self._families, CLIENT_STREAM, method)
            return grpc.stream_unary_rpc_method_handler(
                _single(handler.stream_unary, calls), **serialization
            )
        calls = _CallMetrics(self._families, BIDI_STREAM, method)
        return grpc.stream_stream_rpc_method_handler(
            _streamed(handler.stream_stream, calls), **serialization
        )


Behaviour = Callable[[Any, grpc.ServicerContext], Any]


def _single(behaviour: Behaviour, calls: _CallMetrics) -> Behaviour:
    """A behaviour with one response, measured."""

    def measured(request: Any, context: grpc.ServicerContext) -> Any:
        began = calls.started()
        try:
            response = behaviour(request, context)
        except BaseException as exc:
            calls.handled(began, status_code(context, exc))
            raise
        calls.handled(began, status_code(context, None))
        return response

    return measured


def _streamed(behaviour: Behaviour, calls: _CallMetrics) -> Behaviour:
    """A behaviour with a response stream, measured until the stream ends."""

    def measured(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        began = calls.started()
        try:
            yield from behaviour(request, context)
        except GeneratorExit:  # grpcio closes the stream of a call that was cancelled
            calls.handled(began, grpc.StatusCode.CANCELLED)
            raise
        except BaseException as exc:
            calls.handled(began, status_code(context, exc))
            raise
        calls.handled(began, status_code(context, None))

    return measured

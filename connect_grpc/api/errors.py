"""The one place where domain errors become gRPC statuses (with google.rpc details)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TypeVar

import grpc
import structlog
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import (
    AbortedError,
    AlreadyExistsError,
    ConnectError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
)

log = structlog.get_logger(__name__)

ERROR_DOMAIN = "connect-grpc"

_CODES: list[tuple[type[ConnectError], int]] = [
    (NotFoundError, code_pb2.NOT_FOUND),
    (AlreadyExistsError, code_pb2.ALREADY_EXISTS),
    (AbortedError, code_pb2.ABORTED),
    (InvalidArgumentError, code_pb2.INVALID_ARGUMENT),
    (FailedPreconditionError, code_pb2.FAILED_PRECONDITION),
    (UnavailableError, code_pb2.UNAVAILABLE),
    (UnimplementedError, code_pb2.UNIMPLEMENTED),
    (UnauthenticatedError, code_pb2.UNAUTHENTICATED),
    (PermissionDeniedError, code_pb2.PERMISSION_DENIED),
    (ConnectError, code_pb2.INTERNAL),
]


def _pack(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def to_status(error: ConnectError) -> status_pb2.Status:
    """The rich status of a domain error: code, message, ErrorInfo and type-specific details."""
    code = next((c for kind, c in _CODES if isinstance(error, kind)), code_pb2.UNKNOWN)
    info = error_details_pb2.ErrorInfo(
        reason=error.reason, domain=ERROR_DOMAIN, metadata=error.info_metadata()
    )
    details = [_pack(info)]
    if isinstance(error, InvalidArgumentError) and error.violations:
        details.append(
            _pack(
                error_details_pb2.BadRequest(
                    field_violations=[
                        error_details_pb2.BadRequest.FieldViolation(
                            field=v.field, description=v.description
                        )
                        for v in error.violations
                    ]
                )
            )
        )
    if isinstance(error, FailedPreconditionError) and error.violations:
        details.append(
            _pack(
                error_details_pb2.PreconditionFailure(
                    violations=[
                        error_details_pb2.PreconditionFailure.Violation(
                            type=v.type, subject=v.subject, description=v.description
                        )
                        for v in error.violations
                    ]
                )
            )
        )
    if isinstance(error, UnavailableError):
        retry = duration_pb2.Duration()
        retry.FromMilliseconds(int(error.retry_after_seconds * 1000))
        details.append(_pack(error_details_pb2.RetryInfo(retry_delay=retry)))
    return status_pb2.Status(code=code, message=error.message, details=details)


def abort(context: grpc.ServicerContext, error: ConnectError) -> NoReturn:
    context.abort_with_status(rpc_status.to_status(to_status(error)))
    raise AssertionError("abort_with_status returned")  # pragma: no cover


def _abort_internal(context: grpc.ServicerContext, rpc: str, exc: Exception) -> NoReturn:
    log.exception("rpc_failed", rpc=rpc, error=str(exc))
    context.abort(grpc.StatusCode.INTERNAL, f"{rpc} failed: internal error ({type(exc).__name__})")
    raise AssertionError("abort returned")  # pragma: no cover


def _timed_out(rpc: str, exc: TimeoutError) -> UnavailableError:
    """A wait that ran out (on Kafka, a lock, a plugin) is retryable, not an internal error."""
    log.warning("rpc_timed_out", rpc=rpc, error=str(exc))
    return UnavailableError(f"{rpc} timed out waiting: {exc or 'no answer in time'}; retry")


F = TypeVar("F", bound=Callable[..., Any])


def mapped(method: F) -> F:
    """Wraps a unary servicer method: runs it within the caller's deadline (see
    ``connect_grpc.kernel.deadline``); domain errors → status; timeouts → UNAVAILABLE; anything
    else → INTERNAL."""

    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            with deadline.scope(context.time_remaining()):
                return method(self, request, context)
        except ConnectError as exc:
            abort(context, exc)
        except TimeoutError as exc:
            abort(context, _timed_out(method.__name__, exc))
        except Exception as exc:
            _abort_internal(context, method.__name__, exc)

    return wrapper  # type: ignore[return-value]


def mapped_stream(method: F) -> F:
    """Like ``mapped``, for server-streaming methods (which have no overall deadline)."""

    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            yield from method(self, request, context)
        except ConnectError as exc:
            abort(context, exc)
        except TimeoutError as exc:
            abort(context, _timed_out(method.__name__, exc))
        except Exception as exc:
            _abort_internal(context, method.__name__, exc)

    return wrapper  # type: ignore[return-value]

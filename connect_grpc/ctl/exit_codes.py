"""Exit codes of ``connect-grpc ctl``, one per family of gRPC status codes, and how an error
is described to the user (code, reason, message, every violation)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import grpc

from connect_grpc.client.convert import call_failure_of, server_retry_delay
from connect_grpc.kernel.errors import (
    AbortedError,
    ConnectError,
    FailedPreconditionError,
    InvalidArgumentError,
    UnavailableError,
)


class ExitCode(enum.IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    NOT_FOUND = 3
    INVALID_ARGUMENT = 4
    FAILED_PRECONDITION = 5
    ALREADY_EXISTS = 6
    UNAVAILABLE = 7
    DENIED = 8
    INSTANCE_FAILED = 9
    ABORTED = 10
    INTERRUPTED = 130


#: (exit code, when), in order; ``--help`` and docs/ctl.md show this table.
EXIT_CODE_TABLE: tuple[tuple[ExitCode, str], ...] = (
    (ExitCode.OK, "success"),
    (ExitCode.ERROR, "any other error: INTERNAL, UNKNOWN, UNIMPLEMENTED, CANCELLED, ..."),
    (ExitCode.USAGE,
     "bad command line (unknown option, missing argument, bad regex, unusable TLS or token file)"),
    (ExitCode.NOT_FOUND, "NOT_FOUND: no such connector, task or context"),
    (ExitCode.INVALID_ARGUMENT,
     "INVALID_ARGUMENT, OUT_OF_RANGE: a bad file, config or offsets; apply --dry-run errors"),
    (ExitCode.FAILED_PRECONDITION,
     "FAILED_PRECONDITION: not in the right state (e.g. offsets of a connector not STOPPED)"),
    (ExitCode.ALREADY_EXISTS, "ALREADY_EXISTS"),
    (ExitCode.UNAVAILABLE,
     "UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED: retry later; "
     "also a --timeout that ran out"),
    (ExitCode.DENIED, "PERMISSION_DENIED, UNAUTHENTICATED"),
    (ExitCode.INSTANCE_FAILED,
     "restart or watch: a connector or task ended FAILED"),
    (ExitCode.ABORTED,
     "ABORTED: --if-match ETAG is stale, the connector changed: read it again, then decide"),
    (ExitCode.INTERRUPTED, "interrupted (Ctrl-C)"),
)

_BY_CODE: dict[grpc.StatusCode, ExitCode] = {
    grpc.StatusCode.OK: ExitCode.OK,
    grpc.StatusCode.NOT_FOUND: ExitCode.NOT_FOUND,
    grpc.StatusCode.INVALID_ARGUMENT: ExitCode.INVALID_ARGUMENT,
    grpc.StatusCode.OUT_OF_RANGE: ExitCode.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION: ExitCode.FAILED_PRECONDITION,
    grpc.StatusCode.ALREADY_EXISTS: ExitCode.ALREADY_EXISTS,
    grpc.StatusCode.UNAVAILABLE: ExitCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED: ExitCode.UNAVAILABLE,
    grpc.StatusCode.ABORTED: ExitCode.ABORTED,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ExitCode.UNAVAILABLE,
    grpc.StatusCode.PERMISSION_DENIED: ExitCode.DENIED,
    grpc.StatusCode.UNAUTHENTICATED: ExitCode.DENIED,
}


def exit_code_for(code: grpc.StatusCode) -> ExitCode:
    """The exit code of a call that failed with ``code``."""
    return _BY_CODE.get(code, ExitCode.ERROR)


def exit_code_table() -> str:
    """The table as plain text lines (``--help``)."""
    return "\n".join(f"{int(code):>4}  {when}" for code, when in EXIT_CODE_TABLE)


@dataclass(frozen=True, slots=True)
class Failure:
    """What the user is told about an error, and the exit code."""

    code: grpc.StatusCode
    reason: str
    message: str
    #: One line per field or precondition violation, and the retry hint.
    details: tuple[str, ...]

    @property
    def exit_code(self) -> ExitCode:
        return exit_code_for(self.code)

    def lines(self) -> list[str]:
        """``Error: CODE (REASON): message``, then each detail indented."""
        reason = f" ({self.reason})" if self.reason and self.reason != self.code.name else ""
        return [f"Error: {self.code.name}{reason}: {self.message}",
                *(f"  {detail}" for detail in self.details)]


def failure_of(error: ConnectError) -> Failure:
    """The failure an error of a client call (or of ``ctl``'s own checks) stands for."""
    call = call_failure_of(error)
    details = tuple(line for line in _details(error) if line != error.message)
    message, details = _without_repeats(error.message, details)
    return Failure(call.code, call.reason, message, details)


def _without_repeats(message: str, details: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """A refused create or update lists each error twice: as a ``key: message`` line of its
    message (Kafka Connect's text) and as a field violation (``config.key: message``). Each
    is shown once, as its violation (which names the field as the API does), and the
    message's other lines (the closing hint) follow the violations."""
    first, *rest = message.split("\n")
    if not rest:
        return message, details
    repeated = {detail.removeprefix("config.") for detail in details}
    kept = [line for line in rest if line.strip() not in repeated]
    if len(kept) == len(rest):
        return message, details
    return first, (*details, *(line for line in kept if line.strip()))


def _details(error: ConnectError) -> tuple[str, ...]:
    if isinstance(error, InvalidArgumentError):
        return tuple(f"{v.field}: {v.description}" for v in error.violations)
    if isinstance(error, FailedPreconditionError):
        return tuple(
            f"{v.type} {v.subject}: {v.description}".strip() for v in error.violations
        )
    if isinstance(error, UnavailableError):
        return _retry_advice(error)
    if isinstance(error, AbortedError) and error.current_etag:
        return (f"current etag: {error.current_etag}",)
    return ()


def _retry_advice(error: UnavailableError) -> tuple[str, ...]:
    """ctl has already retried a read (or a write carrying a request_id) the worker asked to
    retry, until ``--request-timeout``; so this is advice to the user, not a promise. A
    transport failure carries no delay of the worker's: its message says what failed."""
    cause = error.__cause__
    if isinstance(cause, grpc.RpcError):
        delay = server_retry_delay(cause)
        if delay is None:
            return ()
    else:
        delay = error.retry_after_seconds
    return (f"the worker asked to retry after {delay:g} s: run the command again",)


def timed_out(message: str) -> Failure:
    """A ``--timeout`` of ``ctl`` itself that ran out: DEADLINE_EXCEEDED, as a call's."""
    return Failure(grpc.StatusCode.DEADLINE_EXCEEDED, "", message, ())

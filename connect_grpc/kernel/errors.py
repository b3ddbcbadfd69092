"""Domain exceptions. No gRPC here: ``api/errors.py`` maps each one to a status code."""

from __future__ import annotations

import copy
from dataclasses import dataclass


class ConnectError(Exception):
    """Base of every error the control plane reports to a caller."""

    reason = "CONNECT_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def info_metadata(self) -> dict[str, str]:
        """What the answer's google.rpc.ErrorInfo carries as metadata (none by default)."""
        return {}

    def in_step(self, step: str) -> ConnectError:
        """The same error, its message prefixed with the step of a multi-step call it failed in."""
        copied = copy.copy(self)
        copied.message = f"step '{step}' failed: {self.message}"
        copied.args = (copied.message,)
        return copied


class NotFoundError(ConnectError):
    """An unknown connector, task or plugin."""

    reason = "NOT_FOUND"


class AbortedError(ConnectError):
    """A conditional write (AIP-154 etag) whose etag no longer matches the connector: it
    changed nothing. ``current_etag`` is the connector's etag now (the caller re-reads,
    decides, and retries with it); the gRPC answer carries it in its ErrorInfo metadata."""

    reason = "ETAG_MISMATCH"

    def __init__(self, message: str, current_etag: str) -> None:
        super().__init__(message)
        self.current_etag = current_etag

    def info_metadata(self) -> dict[str, str]:
        return {"etag": self.current_etag}


class AlreadyExistsError(ConnectError):
    """A connector with that name exists already."""

    reason = "ALREADY_EXISTS"


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One bad field of a request: which field, and what is wrong with it."""

    field: str
    description: str


class InvalidArgumentError(ConnectError):
    """Bad input: the request changes nothing. Carries one violation per bad field."""

    reason = "INVALID_ARGUMENT"

    def __init__(self, message: str, violations: list[FieldViolation] | None = None) -> None:
        super().__init__(message)
        self.violations = violations or []

    @classmethod
    def for_field(cls, field_name: str, description: str) -> InvalidArgumentError:
        return cls(f"{field_name}: {description}", [FieldViolation(field_name, description)])


@dataclass(frozen=True, slots=True)
class PreconditionViolation:
    """What state the call needs: type (e.g. STATE), subject (e.g. the connector) and why."""

    type: str
    subject: str
    description: str


class FailedPreconditionError(ConnectError):
    """The call is valid but not in the resource's current state; do not retry until it changes."""

    reason = "FAILED_PRECONDITION"

    def __init__(
        self, message: str, violations: list[PreconditionViolation] | None = None
    ) -> None:
        super().__init__(message)
        self.violations = violations or []


class UnavailableError(ConnectError):
    """Retry the same call later (no leader, rebalance in progress, group still active)."""

    reason = "UNAVAILABLE"

    def __init__(self, message: str, retry_after_seconds: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class StorageError(UnavailableError):
    """A store (e.g. the standalone offsets file) cannot be written now. The call changed
    nothing; the message names the store (the file's path) and the cause. Retry once the
    storage is fixed: UNAVAILABLE, as a Kafka-backed store that cannot be reached."""

    reason = "STORAGE_UNAVAILABLE"

    def __init__(self, message: str, retry_after_seconds: float = 5.0) -> None:
        super().__init__(message, retry_after_seconds)


class NotLeaderError(UnavailableError):
    """A write reached a worker that is not the cluster's leader (distributed mode).

    The herder raises it; the API layer forwards the call to ``leader_address`` (one hop).
    A call already forwarded that meets it answers UNAVAILABLE with reason NOT_LEADER, which
    the forwarding worker retries: callers never see it as long as a leader appears within
    their deadline. ``leader_address`` is empty while no leader is known.
    """

    reason = "NOT_LEADER"

    def __init__(
        self,
        message: str,
        *,
        leader_id: str = "",
        leader_address: str = "",
        retry_after_seconds: float = 0.5,
    ) -> None:
        super().__init__(message, retry_after_seconds)
        self.leader_id = leader_id
        self.leader_address = leader_address


class InstanceFailedError(ConnectError):
    """A connector or task instance failed to start when the caller waited for it (a plain
    restart, RestartTask); its status holds the trace. Mapped to INTERNAL, as Kafka answers
    500 for a synchronous restart that failed."""

    reason = "INSTANCE_FAILED"


class UnimplementedError(ConnectError):
    """The RPC is declared but not available in this mode or version."""

    reason = "UNIMPLEMENTED"


class UnauthenticatedError(ConnectError):
    """The call carries no credential, or one the worker does not accept (a missing or
    unknown bearer token, a forwarded call without a valid worker signature). It changed
    nothing."""

    reason = "UNAUTHENTICATED"


class PermissionDeniedError(ConnectError):
    """The caller is known but its role does not allow this call (a viewer calling a
    mutation, a client calling a worker-only RPC). It changed nothing."""

    reason = "PERMISSION_DENIED"


class StartupError(ConnectError):
    """The worker cannot start. Names the file or property at fault and says how to fix it;
    the command reports it as one ``worker_start_failed`` line and exits with ``exit_code``:
    2 for a configuration error (the default), 1 for a failure at run time."""

    reason = "STARTUP_FAILED"

    def __init__(
        self,
        message: str,
        *,
        fix: str,
        file: str | None = None,
        property_name: str | None = None,
        exit_code: int = 2,
    ) -> None:
        super().__init__(message)
        self.fix = fix
        self.file = file
        self.property_name = property_name
        self.exit_code = exit_code

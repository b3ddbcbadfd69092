"""When a task retries a failed batch, and for how long: the error classification and the
back-off of ``task.retry.timeout.ms`` / ``task.retry.backoff.max.ms``.

As Kafka Connect's RetryWithToleranceOperator (``errors.retry.timeout``,
``errors.retry.delay.max.ms``): only retriable errors are retried; the delay doubles from
``INITIAL_BACKOFF_S`` up to the maximum; the last attempt happens at the deadline, and a
failure after it is final. Pure code: no Spark, no Kafka I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaException

from connect_grpc.config.worker import Resilience
from connect_grpc.connectors.api import RetriableError
from connect_grpc.kernel.errors import UnavailableError
from connect_grpc.kernel.kafka_clients import KafkaIoError, is_retriable, kafka_error_of
from connect_grpc.runtime.spark import is_python_worker_crash

#: The first delay after a failure; then twice, four times... as long, up to the policy's maximum.
INITIAL_BACKOFF_S = 0.2


__all__ = ["RetriableError", "RetryPolicy", "RetryTracker", "is_retriable_error"]


def is_retriable_error(exc: BaseException) -> bool:
    """Whether a failed batch is worth retrying: a plugin's RetriableError, retriable Kafka
    errors (from the driver's clients or reported by executors), an offset store that is
    unavailable (e.g. an offsets file that cannot be written) and crashed executor Python
    workers. Anything else, notably any other exception from the plugin, is final."""
    if isinstance(exc, RetriableError | UnavailableError):
        return True
    if isinstance(exc, KafkaIoError):
        return exc.retriable
    if isinstance(exc, KafkaException):
        error = kafka_error_of(exc)
        return error is not None and is_retriable(error)
    return is_python_worker_crash(exc)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long to retry (None: for ever) and how long to wait at most between attempts."""

    timeout_s: float | None = 600.0
    backoff_max_s: float = 10.0
    backoff_initial_s: float = INITIAL_BACKOFF_S

    @classmethod
    def from_resilience(cls, resilience: Resilience) -> RetryPolicy:
        timeout_ms = resilience.task_retry_timeout_ms
        return cls(
            timeout_s=None if timeout_ms < 0 else timeout_ms / 1000,
            backoff_max_s=resilience.task_retry_backoff_max_ms / 1000,
        )

    def describe(self) -> str:
        if self.timeout_s is None:
            return "retries for ever (task.retry.timeout.ms=-1)"
        return f"gives up after {self.timeout_s:g} s (task.retry.timeout.ms)"


class RetryTracker:
    """One task's current run of failed attempts. Not thread-safe (the task loop owns it)."""

    def __init__(self, policy: RetryPolicy, clock: Callable[[], float] = time.monotonic) -> None:
        self._policy = policy
        self._clock = clock
        self._since: float | None = None
        self._attempts = 0

    @property
    def policy(self) -> RetryPolicy:
        return self._policy

    @property
    def retrying(self) -> bool:
        return self._since is not None

    @property
    def attempts(self) -> int:
        """Failed attempts in the current run (0 when not retrying)."""
        return self._attempts

    def elapsed(self) -> float:
        """Seconds since the first failure of the current run (0 when not retrying)."""
        return 0.0 if self._since is None else self._clock() - self._since

    def on_failure(self) -> float | None:
        """Records a failed attempt. Returns the seconds to wait before the next attempt, or
        None when the retry time is used up (the failure is final)."""
        now = self._clock()
        if self._since is None:
            self._since = now
        self._attempts += 1
        timeout = self._policy.timeout_s
        if timeout is not None and now - self._since >= timeout:
            return None
        delay = min(
            self._policy.backoff_initial_s * 2.0 ** min(self._attempts - 1, 32),
            self._policy.backoff_max_s,
        )
        if timeout is not None:
            delay = min(delay, self._since + timeout - now)
        return max(delay, 0.0)

    def reset(self) -> bool:
        """Ends the current run (a batch succeeded, or the task was paused). Returns whether
        it was retrying."""
        retrying = self._since is not None
        self._since, self._attempts = None, 0
        return retrying

"""What every confluent-kafka client of the worker shares: which Kafka errors are worth
retrying, and librdkafka logs that do not flood the worker's log while a broker is down.

A leaf module (it imports nothing of the project), so that ``storage/``, ``runtime/`` and the
functions Spark runs on executors can all use it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from confluent_kafka import KafkaError, KafkaException

log = structlog.get_logger(__name__)

#: Seconds during which a client logs at most one librdkafka line (the repeats are counted).
LOG_WINDOW_S = 30.0

# librdkafka's retriable() flag is only set on some errors (never on delivery reports or
# consumer error events), so the classification is by code: transport failures, timeouts and
# the broker-side errors Java's client treats as RetriableException.
_RETRIABLE_NAMES = (
    "_TRANSPORT",
    "_ALL_BROKERS_DOWN",
    "_TIMED_OUT",
    "_TIMED_OUT_QUEUE",
    "_MSG_TIMED_OUT",
    "_RESOLVE",
    "_WAIT_COORD",
    "_WAIT_CACHE",
    "_RETRY",
    "_IN_PROGRESS",
    "_PREV_IN_PROGRESS",
    "_NODE_UPDATE",
    "_OUTDATED",
    # the cluster's metadata lacks the topic or partition, e.g. while a broker restarts
    "_UNKNOWN_PARTITION",
    "_UNKNOWN_TOPIC",
    "_ISR_INSUFF",
    "_ASSIGNMENT_LOST",
    "_MAX_POLL_EXCEEDED",
    "INVALID_MSG",  # Java: CorruptRecordException
    "UNKNOWN_TOPIC_OR_PART",
    "LEADER_NOT_AVAILABLE",
    "NOT_LEADER_FOR_PARTITION",
    "REQUEST_TIMED_OUT",
    "BROKER_NOT_AVAILABLE",
    "REPLICA_NOT_AVAILABLE",
    "NETWORK_EXCEPTION",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "REBALANCE_IN_PROGRESS",
    "ILLEGAL_GENERATION",
    "UNKNOWN_MEMBER_ID",
    "NOT_CONTROLLER",
    "KAFKA_STORAGE_ERROR",
    "FETCH_SESSION_ID_NOT_FOUND",
    "INVALID_FETCH_SESSION_EPOCH",
    "OFFSET_NOT_AVAILABLE",
    "UNKNOWN_LEADER_EPOCH",
    "FENCED_LEADER_EPOCH",
    "PREFERRED_LEADER_NOT_AVAILABLE",
    "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    "UNSTABLE_OFFSET_COMMIT",
    "THROTTLING_QUOTA_EXCEEDED",
    "CONCURRENT_TRANSACTIONS",
)
RETRIABLE_CODES: frozenset[int] = frozenset(
    getattr(KafkaError, name) for name in _RETRIABLE_NAMES if hasattr(KafkaError, name)
)


def is_retriable(error: KafkaError) -> bool:
    """Whether retrying the same operation later may succeed (never for a fatal error)."""
    if error.fatal():
        return False
    return bool(error.retriable()) or error.code() in RETRIABLE_CODES


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    """The KafkaError a KafkaException carries, if any."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


class ClientLog:
    """librdkafka's ``logger`` and ``error_cb`` for one client.

    While a broker is down, librdkafka reports every failed connection attempt (several a
    second per client). This logs the first line, then at most one line per ``window_s``,
    carrying how many lines it suppressed since the previous one. Fatal errors are always
    logged. Thread-safe.
    """

    def __init__(
        self,
        client: str,
        window_s: float = LOG_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
        sink: Any = None,
    ) -> None:
        self._client = client
        self._window_s = window_s
        self._clock = clock
        self._log = (sink or log).bind(client=client)
        self._lock = threading.Lock()
        self._last: float | None = None
        self._suppressed = 0

    def log(self, level: int, msg: str, *args: object) -> None:
        """The ``logging.Logger.log`` signature librdkafka's log callback calls."""
        text = msg % args if args else msg
        self._emit(level, "kafka_client_logged", text, always=False)

    def error(self, error: KafkaError) -> None:
        """The ``error_cb``: client-level errors (transport failures, fatal errors)."""
        self._emit(
            logging.CRITICAL if error.fatal() else logging.WARNING,
            "kafka_client_error",
            f"{error.name()}: {error.str()}",
            always=bool(error.fatal()),
        )

    def _emit(self, level: int, event: str, text: str, always: bool) -> None:
        with self._lock:
            now = self._clock()
            if not always and self._last is not None and now - self._last < self._window_s:
                self._suppressed += 1
                return
            suppressed, self._suppressed, self._last = self._suppressed, 0, now
        fields: dict[str, object] = {"message": text}
        if suppressed:
            fields["suppressed"] = suppressed
            fields["window_s"] = self._window_s
        self._log.log(max(level, logging.INFO), event, **fields)


def with_client_log(conf: Mapping[str, Any], client: str) -> dict[str, Any]:
    """``conf`` plus a rate-limited ``logger`` and ``error_cb`` (see ClientLog)."""
    client_log = ClientLog(client)
    return {**conf, "logger": client_log, "error_cb": client_log.error}

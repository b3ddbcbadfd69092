"""What every confluent-kafka client of the worker shares: which Kafka errors are worth
retrying, librdkafka logs that do not flood the worker's log while a broker is down, and
how a group member is closed so that it leaves its group at once.

Every error code confluent-kafka defines (``KafkaError``'s int attributes, librdkafka's
local ``_``-prefixed ones included) is classified on purpose in exactly one of
``RETRIABLE_NAMES`` and ``FINAL_NAMES``; a unit test fails when a new librdkafka release adds
a code nobody classified. A fatal error (``error.fatal()``) is never retriable, whatever its
code; librdkafka's own ``retriable()`` flag, set on some errors only, also counts.

``_DESTROY`` and ``_DESTROY_BROKER`` differ: ``_DESTROY`` ("destroyed for termination")
means this client is being closed, by us, during a stop; retrying on a closing client cannot
succeed, and a stop is not a failure, so it is final. ``_DESTROY_BROKER`` ("destroyed
without termination") means librdkafka tore down one broker connection while the client
lives on, as happens while a broker is unreachable; the client reconnects when the broker
returns, so it is retriable (a standalone sink stayed FAILED after an outage when it was not).

A leaf module (it imports nothing of the project), so that ``storage/``, ``runtime/`` and the
functions Spark runs on executors can all use it.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import structlog
from confluent_kafka import KafkaError, KafkaException

log = structlog.get_logger(__name__)

#: Seconds during which a client logs at most one librdkafka line (the repeats are counted).
LOG_WINDOW_S = 30.0

#: librdkafka's WARNING that an idempotent producer's id request was put off and will be
#: retried, for a cause that passes: a broker that just started answers the first
#: InitProducerId with COORDINATOR_LOAD_IN_PROGRESS until its producer-id manager got its
#: first block of ids from the controller, which every worker's first producers hit on a
#: fresh KRaft broker. The text is librdkafka's (rd_kafka_idemp_request_pid_failed).
TRANSIENT_PID_RETRY = re.compile(
    r"Failed to acquire (?:idempotence|transactional) PID from broker .*: Broker: "
    r"(?:Coordinator load in progress|Coordinator not available|Not coordinator): retrying$"
)
#: Seconds a run of such retries is logged at DEBUG; a run that lasts longer is no longer
#: a broker starting: it is logged as librdkafka says (WARNING), rate-limited as any line.
PID_RETRY_GRACE_S = 30.0

#: Errors after which the same operation may succeed later: what an outage, a leadership move
#: or a rebalance looks like. Broker codes follow Java's RetriableException where it has one.
RETRIABLE_NAMES: frozenset[str] = frozenset({
    # the broker cannot be reached or the connection broke; librdkafka reconnects
    "_TRANSPORT", "_FAIL", "_RESOLVE", "_ALL_BROKERS_DOWN", "_DESTROY_BROKER", "_NODE_UPDATE",
    "_UNKNOWN_BROKER", "NETWORK_EXCEPTION", "BROKER_NOT_AVAILABLE",
    # no answer in time, or the local queue is full until the broker drains it
    "_TIMED_OUT", "_TIMED_OUT_QUEUE", "_MSG_TIMED_OUT", "REQUEST_TIMED_OUT", "_QUEUE_FULL",
    # librdkafka asks to call again: an operation pending, a cache refresh, interrupted
    "_RETRY", "_IN_PROGRESS", "_PREV_IN_PROGRESS", "_WAIT_CACHE", "_OUTDATED", "_INTR",
    "_PARTIAL",
    # messages purged unsent (an aborted transaction, a producer flushed at close): resent
    # with the batch
    "_PURGE_QUEUE", "_PURGE_INFLIGHT",
    # stale metadata: a topic, partition or leader the client does not know yet or any more
    "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC", "UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_ID",
    "INCONSISTENT_TOPIC_ID", "LEADER_NOT_AVAILABLE", "NOT_LEADER_FOR_PARTITION",
    "REPLICA_NOT_AVAILABLE", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH",
    "OFFSET_NOT_AVAILABLE", "PREFERRED_LEADER_NOT_AVAILABLE", "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    "NOT_CONTROLLER", "KAFKA_STORAGE_ERROR", "LISTENER_NOT_FOUND", "REBOOTSTRAP_REQUIRED",
    # the group or transaction coordinator is loading, moving or not found yet
    "_WAIT_COORD", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR", "CONCURRENT_TRANSACTIONS", "UNSTABLE_OFFSET_COMMIT",
    # a rebalance: the member rejoins and gets an assignment again
    "_ASSIGNMENT_LOST", "_MAX_POLL_EXCEEDED", "_ASSIGN_PARTITIONS", "_REVOKE_PARTITIONS",
    "REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "MEMBER_ID_REQUIRED",
    "FENCED_MEMBER_EPOCH", "STALE_MEMBER_EPOCH", "UNRELEASED_INSTANCE_ID",
    # too few in-sync replicas while brokers restart
    "_ISR_INSUFF", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    # fetch and share sessions the broker forgot, quotas, a record corrupted in transit
    # (Java: CorruptRecordException)
    "FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH", "SHARE_SESSION_NOT_FOUND",
    "INVALID_SHARE_SESSION_EPOCH", "SHARE_SESSION_LIMIT_REACHED", "THROTTLING_QUOTA_EXCEEDED",
    "INVALID_MSG",
})

#: Errors the same operation meets again however long it waits: someone must change a
#: config, an ACL, the data or the code.
FINAL_NAMES: frozenset[str] = frozenset({
    # this client is being closed (a stop), or is fatally broken
    "_DESTROY", "_FATAL", "_CRIT_SYS_RESOURCE", "_FS",
    # fenced by a newer instance: the zombie must stop
    "_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "FENCED_INSTANCE_ID",
    "TRANSACTION_COORDINATOR_FENCED", "STREAMS_TOPOLOGY_FENCED", "FENCED_STATE_EPOCH",
    # transaction or idempotence state that the producer cannot repair by itself
    "INVALID_TXN_STATE", "INVALID_PRODUCER_ID_MAPPING", "OUT_OF_ORDER_SEQUENCE_NUMBER",
    "DUPLICATE_SEQUENCE_NUMBER", "UNKNOWN_PRODUCER_ID", "TRANSACTION_ABORTABLE",
    "_GAPLESS_GUARANTEE", "_INCONSISTENT",
    # authentication and authorization
    "_AUTHENTICATION", "_SSL", "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    "SASL_AUTHENTICATION_FAILED", "UNSUPPORTED_SASL_MECHANISM", "ILLEGAL_SASL_STATE",
    "SECURITY_DISABLED", "INVALID_PRINCIPAL_TYPE", "PRINCIPAL_DESERIALIZATION_FAILURE",
    "UNACCEPTABLE_CREDENTIAL", "DELEGATION_TOKEN_AUTH_DISABLED", "DELEGATION_TOKEN_NOT_FOUND",
    "DELEGATION_TOKEN_OWNER_MISMATCH", "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED", "DELEGATION_TOKEN_EXPIRED",
    # a client or worker configuration, or a use of the API, that is wrong
    "_INVALID_ARG", "_NOT_CONFIGURED", "_UNSUPPORTED_FEATURE", "_UNKNOWN_PROTOCOL",
    "_NOT_IMPLEMENTED", "_CONFLICT", "_STATE", "_EXISTING_SUBSCRIPTION", "_READ_ONLY",
    "_NOENT", "_UNDERFLOW", "_INVALID_TYPE", "_APPLICATION", "_UNKNOWN_GROUP",
    "INVALID_CONFIG", "INVALID_REQUEST", "INVALID_REQUIRED_ACKS", "INVALID_GROUP_ID",
    "INCONSISTENT_GROUP_PROTOCOL", "INVALID_SESSION_TIMEOUT", "INVALID_TRANSACTION_TIMEOUT",
    "UNSUPPORTED_VERSION", "UNSUPPORTED_FOR_MESSAGE_FORMAT", "UNSUPPORTED_COMPRESSION_TYPE",
    "UNSUPPORTED_ASSIGNOR", "GROUP_MAX_SIZE_REACHED", "INVALID_REGULAR_EXPRESSION",
    "MISMATCHED_ENDPOINT_TYPE", "UNSUPPORTED_ENDPOINT_TYPE", "POLICY_VIOLATION",
    "TOPIC_EXCEPTION",
    # admin requests refused as asked (creating, deleting, reassigning, features)
    "TOPIC_ALREADY_EXISTS", "INVALID_PARTITIONS", "INVALID_REPLICATION_FACTOR",
    "INVALID_REPLICA_ASSIGNMENT", "TOPIC_DELETION_DISABLED", "NON_EMPTY_GROUP",
    "GROUP_ID_NOT_FOUND", "GROUP_SUBSCRIBED_TO_TOPIC", "REASSIGNMENT_IN_PROGRESS",
    "NO_REASSIGNMENT_IN_PROGRESS", "ELECTION_NOT_NEEDED", "LOG_DIR_NOT_FOUND",
    "RESOURCE_NOT_FOUND", "DUPLICATE_RESOURCE", "INVALID_UPDATE_VERSION",
    "FEATURE_UPDATE_FAILED", "OPERATION_NOT_ATTEMPTED",
    # the records themselves: too large, invalid, not (de)serializable, corrupt at rest
    "MSG_SIZE_TOO_LARGE", "INVALID_MSG_SIZE", "RECORD_LIST_TOO_LARGE",
    "OFFSET_METADATA_TOO_LARGE", "INVALID_COMMIT_OFFSET_SIZE", "INVALID_TIMESTAMP",
    "INVALID_RECORD", "INVALID_RECORD_STATE", "_INVALID_DIFFERENT_RECORD", "_BAD_MSG",
    "_BAD_COMPRESSION", "_KEY_SERIALIZATION", "_VALUE_SERIALIZATION", "_KEY_DESERIALIZATION",
    "_VALUE_DESERIALIZATION",
    # offsets gone or truncated: a reset policy or an operator decides, not time
    "OFFSET_OUT_OF_RANGE", "_AUTO_OFFSET_RESET", "_LOG_TRUNCATION",
    # not failures (events, "nothing to do"): raising one is a bug that waiting cannot fix
    "NO_ERROR", "_PARTITION_EOF", "_NOOP", "_NO_OFFSET",
    # an unexpected broker error (Java: UnknownServerException, not retriable)
    "UNKNOWN",
    # between brokers and controllers, or client telemetry: never a task's to retry
    "STALE_CTRL_EPOCH", "STALE_BROKER_EPOCH", "INCONSISTENT_VOTER_SET", "INVALID_REGISTRATION",
    "UNKNOWN_CONTROLLER_ID", "INVALID_VOTER_KEY", "DUPLICATE_VOTER", "VOTER_NOT_FOUND",
    "UNKNOWN_SUBSCRIPTION_ID", "TELEMETRY_TOO_LARGE", "STREAMS_INVALID_TOPOLOGY",
    "STREAMS_INVALID_TOPOLOGY_EPOCH",
})

RETRIABLE_CODES: frozenset[int] = frozenset(
    getattr(KafkaError, name) for name in RETRIABLE_NAMES if hasattr(KafkaError, name)
)


def is_retriable(error: KafkaError) -> bool:
    """Whether retrying the same operation later may succeed (never for a fatal error)."""
    if error.fatal():
        return False
    return bool(error.retriable()) or error.code() in RETRIABLE_CODES


class KafkaIoError(Exception):
    """Kafka I/O failed; ``retriable`` says whether a retry may succeed. Here, below the
    task loops and the record pipeline, so that the dead-letter queue can say its writes
    are not acknowledged yet the way a batch's produce or read says it."""

    def __init__(self, message: str, retriable: bool) -> None:
        super().__init__(message)
        self.retriable = retriable


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    """The KafkaError a KafkaException carries, if any."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


class _GroupMember(Protocol):
    def unsubscribe(self) -> None: ...
    def close(self) -> None: ...


def leave_group_and_close(consumer: _GroupMember) -> None:
    """Closes a consumer that subscribed in a group so that it leaves the group at once.

    librdkafka (2.16) sends no LeaveGroup when it closes a ``cooperative-sticky`` member that
    holds no partition: the group then waits ``session.timeout.ms`` for it before it
    rebalances (a stopped worker stayed in the leader election group that long). An
    unsubscribe first makes it leave. Raises what ``close`` raises."""
    try:
        consumer.unsubscribe()
    except (KafkaException, RuntimeError) as exc:  # close() still leaves, when it can
        log.debug("group_member_unsubscribe_failed", error=repr(exc))
    consumer.close()


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
        #: The first and the latest transient producer-id retry of the current run.
        self._pid_retries: tuple[float, float] | None = None

    def log(self, level: int, msg: str, *args: object) -> None:
        """The ``logging.Logger.log`` signature librdkafka's log callback calls."""
        text = msg % args if args else msg
        if TRANSIENT_PID_RETRY.search(text) and self._early_pid_retry():
            self._log.log(logging.DEBUG, "kafka_client_logged", message=text)
            return
        self._emit(level, "kafka_client_logged", text, always=False)

    def _early_pid_retry(self) -> bool:
        """Records a transient producer-id retry; True while its run of retries (retries
        less than PID_RETRY_GRACE_S apart) has lasted less than PID_RETRY_GRACE_S."""
        with self._lock:
            now = self._clock()
            run = self._pid_retries
            first = now if run is None or now - run[1] > PID_RETRY_GRACE_S else run[0]
            self._pid_retries = (first, now)
            return now - first < PID_RETRY_GRACE_S

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

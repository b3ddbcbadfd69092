"""Kafka admin calls run in a child process, so that librdkafka cannot abort the worker.

librdkafka (2.16 included) can abort the whole process on a coordinator-targeted admin
request (DescribeConsumerGroups, ListConsumerGroupOffsets, AlterConsumerGroupOffsets,
DeleteConsumerGroups) whose send fails while the coordinator's connection changes, e.g.
about a second after a broker restarts: ``rd_kafka_enq_once_del_source_return: Assertion
'eonce->refcnt > 0' failed`` (confluentinc/librdkafka#4605; the fix, #5397, is not
released). No client life cycle avoids it, so the worker sends none of these requests
itself: one child process owns one long-lived AdminClient and runs the calls one at a
time. A call that the child does not answer in time, or that kills it, raises
UnavailableError; the next call starts a new child. A child still starting (an interpreter's
start and imports, seconds on a busy machine) is left to start: the call that finds it so is
UNAVAILABLE, and a later one uses it.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import threading
import time
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from typing import Any

import structlog

from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import UnavailableError
from connect_grpc.kernel.kafka_clients import is_retriable, kafka_error_of, with_client_log

log = structlog.get_logger(__name__)

#: Seconds kept from a call's budget for the child's answer to come back.
ANSWER_MARGIN_S = 0.5
#: Seconds a child may take to stop when asked.
STOP_TIMEOUT_S = 5.0
#: Retry hint when the child did not answer.
RETRY_AFTER_S = 2.0
#: Seconds a child may take to start (an interpreter's start and imports: seconds on a busy
#: machine) before it is taken as stuck and replaced. A call that finds it still starting is
#: UNAVAILABLE and leaves it starting: replaced each time, it would never start under load.
CHILD_START_TIMEOUT_S = 60.0
#: What the child sends once its client exists, before any answer.
_READY = ("ready", None)

GroupOffsetList = list[tuple[str, int, int]]
#: A per-partition error of an alter: (topic, partition, code, message).
PartitionError = tuple[str, int, int, str]


class AdminCallError(Exception):
    """A Kafka error answered to an admin call (picklable: plain fields only)."""

    def __init__(self, code: int, name: str, retriable: bool, message: str) -> None:
        super().__init__(code, name, retriable, message)
        self.code = code
        self.name = name
        self.retriable = retriable
        self.message = message

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


# ---- the child's side ----------------------------------------------------------------------


def _call_error(exc: BaseException) -> AdminCallError:
    error = kafka_error_of(exc)
    if error is not None:
        return AdminCallError(error.code(), error.name(), is_retriable(error), error.str())
    if isinstance(exc, concurrent.futures.TimeoutError | TimeoutError):
        return AdminCallError(-185, "_TIMED_OUT", True, "no answer in time")
    return AdminCallError(-1, type(exc).__name__, False, str(exc))


def _result(future: Any, timeout_s: float) -> Any:
    # librdkafka ends the request at request_timeout; the extra second only covers the
    # hand-over of its answer, so no request of ours is left outstanding.
    return future.result(timeout=timeout_s + 1.0)


def _describe_group(admin: Any, timeout_s: float, group: str) -> bool:
    """Whether the group has members."""
    future = admin.describe_consumer_groups([group], request_timeout=timeout_s)[group]
    return bool(_result(future, timeout_s).members)


def _group_members(admin: Any, timeout_s: float, group: str) -> list[str]:
    """The client ids of the group's current members, sorted (empty: no such group)."""
    future = admin.describe_consumer_groups([group], request_timeout=timeout_s)[group]
    return sorted(member.client_id for member in _result(future, timeout_s).members or [])


def _list_group_offsets(admin: Any, timeout_s: float, group: str) -> GroupOffsetList:
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = [ConsumerGroupTopicPartitions(group)]
    future = admin.list_consumer_group_offsets(request, request_timeout=timeout_s)[group]
    answer = _result(future, timeout_s)
    return [(tp.topic, tp.partition, tp.offset) for tp in answer.topic_partitions or []]


def _alter_group_offsets(
    admin: Any, timeout_s: float, group: str, offsets: GroupOffsetList
) -> list[PartitionError]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    partitions = [TopicPartition(t, p, o) for t, p, o in offsets]
    request = [ConsumerGroupTopicPartitions(group, partitions)]
    future = admin.alter_consumer_group_offsets(request, request_timeout=timeout_s)[group]
    answer = _result(future, timeout_s)
    return [
        (tp.topic, tp.partition, tp.error.code(), str(tp.error))
        for tp in answer.topic_partitions or []
        if tp.error is not None
    ]


def _delete_group(admin: Any, timeout_s: float, group: str) -> None:
    future = admin.delete_consumer_groups([group], request_timeout=timeout_s)[group]
    _result(future, timeout_s)


#: How long a topic missing from the cluster's metadata is looked for again: a topic created
#: a moment ago may not be in the answering broker's metadata yet.
MISSING_TOPIC_RECHECK_S = 1.0


def _partition_counts(admin: Any, timeout_s: float, topics: list[str]) -> dict[str, int]:
    """Each topic that exists, with its number of partitions. A topic not found is looked
    for once more ``MISSING_TOPIC_RECHECK_S`` later (within the call's time), so a topic
    just created is not refused as unknown."""
    ends_at = time.monotonic() + timeout_s
    counts = _listed_partition_counts(admin, timeout_s, topics)
    if len(counts) < len(topics) and ends_at - time.monotonic() > 2 * MISSING_TOPIC_RECHECK_S:
        time.sleep(MISSING_TOPIC_RECHECK_S)
        counts = _listed_partition_counts(admin, ends_at - time.monotonic(), topics)
    return counts


def _listed_partition_counts(admin: Any, timeout_s: float, topics: list[str]) -> dict[str, int]:
    from confluent_kafka import KafkaError

    metadata = admin.list_topics(timeout=timeout_s)
    counts: dict[str, int] = {}
    for topic in topics:
        found = metadata.topics.get(topic)
        if found is None:
            continue
        if found.error is None or found.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            counts[topic] = len(found.partitions)
    return counts


_OPS: Mapping[str, Callable[..., Any]] = {
    "describe_group": _describe_group,
    "group_members": _group_members,
    "list_group_offsets": _list_group_offsets,
    "alter_group_offsets": _alter_group_offsets,
    "delete_group": _delete_group,
    "partition_counts": _partition_counts,
}


def time_left(answer_by: float) -> float:
    """Seconds until ``answer_by`` (``time.monotonic()``), at least 0. The parent sends its
    deadline as an instant, not a duration: CLOCK_MONOTONIC is one clock for every process
    of the machine, so a child that took long to start or to read the request gives the
    call what is left, and answers within the parent's wait."""
    return max(0.0, answer_by - time.monotonic())


def _serve(conn: Connection, conf: dict[str, str], log_format: str) -> None:
    """The child's loop: one AdminClient, one call at a time, until the parent goes away."""
    from confluent_kafka.admin import AdminClient

    from connect_grpc.logs.output import configure_logging

    configure_logging(log_format)
    admin = AdminClient(with_client_log(conf, conf.get("client.id", "admin")))
    conn.send(_READY)
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        op, args, answer_by = request
        try:
            reply: tuple[str, Any] = ("ok", _OPS[op](admin, time_left(answer_by), *args))
        except Exception as exc:
            reply = ("error", _call_error(exc))
        admin.poll(0)  # serves the (rate-limited) client logs
        conn.send(reply)


# ---- the worker's side ---------------------------------------------------------------------


class IsolatedAdmin:
    """Runs admin calls in a child process (started on first use); thread-safe."""

    def __init__(self, conf: Mapping[str, str], log_format: str = "json") -> None:
        self._conf = dict(conf)
        self._log_format = log_format
        self._lock = threading.Lock()
        self._process: Any = None
        self._conn: Connection | None = None
        #: Whether the child said it is ready; when it was started.
        self._ready = False
        self._started_at = 0.0

    def call(self, op: str, *args: Any) -> Any:
        """Runs ``op`` within the caller's deadline (``deadline.remaining()``).

        Raises:
            AdminCallError: Kafka answered with an error.
            UnavailableError: no answer in time (Kafka unreachable, or busy with another
                call), or the child crashed.
        """
        budget = deadline.remaining()
        if not self._lock.acquire(timeout=budget):
            raise self._unavailable(op, "another admin call is still waiting for Kafka")
        try:
            return self._call_locked(op, args, deadline.remaining())
        finally:
            self._lock.release()

    def start(self) -> None:
        """Starts the child now, unless one runs (or a call is under way), rather than on
        the first call: that call then does not wait for a Python interpreter to start and
        import, seconds on a busy machine. Returns without waiting for the child."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            self._child()
        finally:
            self._lock.release()

    def close(self) -> None:
        """Stops the child (if any). Idempotent."""
        with self._lock:
            self._stop_child(graceful=True)

    def _call_locked(self, op: str, args: tuple[Any, ...], budget: float) -> Any:
        if budget <= ANSWER_MARGIN_S:
            raise self._unavailable(op, "the call's deadline leaves no time to ask Kafka")
        answer_by = time.monotonic() + budget
        conn = self._child()
        try:
            if not self._ready:
                self._await_ready(conn, op, answer_by)
                budget = answer_by - time.monotonic()
                if budget <= ANSWER_MARGIN_S:
                    raise self._unavailable(op, "the admin client was starting (retry)")
            conn.send((op, args, time.monotonic() + budget - ANSWER_MARGIN_S))
            if not conn.poll(budget):
                self._stop_child(graceful=False)
                raise self._unavailable(op, f"Kafka did not answer within {budget:.1f} s")
            status, payload = conn.recv()
        except (EOFError, OSError):
            exit_code = self._stop_child(graceful=False)
            log.error("kafka_admin_process_crashed", op=op, exit_code=exit_code)
            raise self._unavailable(op, "the Kafka admin client crashed (retry)") from None
        if status == "error":
            raise payload
        return payload

    def _await_ready(self, conn: Connection, op: str, answer_by: float) -> None:
        """Waits until ``answer_by`` for the child's word that it started. One still starting
        is left to start (UNAVAILABLE), unless it has taken CHILD_START_TIMEOUT_S."""
        if conn.poll(max(0.0, answer_by - time.monotonic())):
            if conn.recv() != _READY:
                raise EOFError("the Kafka admin process answered before it said it started")
            self._ready = True
            return
        if time.monotonic() - self._started_at >= CHILD_START_TIMEOUT_S:
            self._stop_child(graceful=False)
            raise self._unavailable(
                op, f"the admin client did not start within {CHILD_START_TIMEOUT_S:.0f} s")
        raise self._unavailable(op, "the admin client is still starting (retry)")

    def _child(self) -> Connection:
        if self._process is not None and self._process.is_alive() and self._conn is not None:
            return self._conn
        self._stop_child(graceful=False)
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        process = context.Process(
            target=_serve,
            args=(child, self._conf, self._log_format),
            name="kafka-admin",
            daemon=True,
        )
        process.start()
        child.close()
        self._process, self._conn = process, parent
        self._ready, self._started_at = False, time.monotonic()
        log.info("kafka_admin_process_started", pid=process.pid)
        return parent

    def _stop_child(self, graceful: bool) -> int | None:
        process, conn = self._process, self._conn
        self._process, self._conn = None, None
        if process is None:
            return None
        if graceful and conn is not None:
            try:
                conn.send(None)
                process.join(STOP_TIMEOUT_S)
            except OSError:
                pass
        if process.is_alive():
            process.kill()
            process.join(STOP_TIMEOUT_S)
        if conn is not None:
            conn.close()
        exit_code: int | None = process.exitcode
        return exit_code

    @staticmethod
    def _unavailable(op: str, why: str) -> UnavailableError:
        return UnavailableError(
            f"Kafka admin call {op} failed: {why}", retry_after_seconds=RETRY_AFTER_S
        )

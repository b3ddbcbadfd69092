"""The worker's metrics: what its tasks move (counted by the task loops, per batch) and
the states of its instances and of the cluster (read when scraped, so that a connector
gone from the worker is gone from the scrape).

Every family lives in the worker's own ``CollectorRegistry`` (not the process-wide one):
two workers in one process, as tests run them, never share a series.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter as Tally
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from connect_grpc.connectors.plugin_metrics import PluginMetrics, PluginMetricsStore
from connect_grpc.kernel.domain import PlacementKind, State, TaskId
from connect_grpc.metrics.auto_restart_metrics import AutoRestartMetrics
from connect_grpc.metrics.plugin_metrics import PluginMetricsCollector

TASK_LABELS = ("connector", "task")
#: Records in a batch: a task's batches grow from one record to ``batch.max.records``.
BATCH_SIZE_BUCKETS = (1, 10, 100, 1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000)
#: Seconds of an offset commit or of a batch's move.
SECONDS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

#: Where a batch was moved (the ``runs_on`` label of the batch-time histogram): by the
#: task's own clients on the driver, by a Spark job, or by the long-running Spark task that
#: hosts the task (``task.hosting=executor``; timed as the driver's round trip to it).
ON_DRIVER = "driver"
ON_SPARK_JOB = "spark_job"
ON_SPARK_TASK = "spark_task"


def status_label(state: State) -> str:
    """A state as Kafka Connect's metrics spell it (``running``, ``paused``, …)."""
    return state.value.lower()


class WorkerView(Protocol):
    """What the scrape reads from the worker (``runtime.worker.Worker``)."""

    def instance_states(self) -> tuple[Mapping[str, State], Mapping[TaskId, State]]:
        """The state of each connector and task instance the worker runs."""
        ...

    def task_placements(self) -> Mapping[TaskId, PlacementKind]:
        """Where each task the worker runs lives: on the driver or in a Spark executor."""
        ...


@dataclass(frozen=True, slots=True)
class RebalanceState:
    """A distributed worker's view of the group, for the rebalance metrics."""

    #: The generation of the assignment this worker runs (Kafka Connect's ``epoch``).
    generation: int
    #: The leader's worker id ("" while none is known).
    leader_id: str
    #: Whether this worker carries out the leader's duties now.
    is_leader: bool
    #: Assignments (generations) this worker has applied since it started.
    completed_rebalances: int


class ClusterView(Protocol):
    """What the scrape reads from a distributed herder."""

    def rebalance_state(self) -> RebalanceState: ...


@dataclass(slots=True)
class CommitTally:
    """Offset commits counted where the worker's metrics are out of reach (an exactly-once
    producer in the Spark task that hosts its task), handed to the driver with the next
    answer. Picklable."""

    #: Seconds each successful commit took.
    succeeded: list[float] = field(default_factory=list)
    failed: int = 0

    def take(self) -> CommitTally:
        """What was counted since the last ``take``; counting starts again from nothing."""
        taken = CommitTally(self.succeeded, self.failed)
        self.succeeded, self.failed = [], 0
        return taken


@dataclass(slots=True)
class ErrorCounts:
    """A task's record errors since they were last taken (Kafka Connect's
    ``task-error-metrics``), counted by its retry-with-tolerance operator and reporters
    wherever the records are (the driver, or the Spark task hosting the task) and handed
    to the task's metrics once per batch. Picklable."""

    #: Failed attempts, each retry included (total-record-failures).
    failures: int = 0
    #: Records whose processing ended in failure (total-record-errors).
    errors: int = 0
    #: Records skipped after a failure (total-records-skipped).
    skipped: int = 0
    #: Retries of a retriable failure (total-retries).
    retries: int = 0
    #: Failures the log reporter logged (total-errors-logged).
    logged: int = 0
    #: Records sent to the dead-letter queue, and those it could not take
    #: (deadletterqueue-produce-requests / -failures).
    dlq_requests: int = 0
    dlq_failures: int = 0
    #: Wall-clock ms of the last failure (last-error-timestamp); 0: none since last taken.
    last_error_ms: int = 0

    def take(self) -> ErrorCounts:
        """What was counted since the last ``take``; counting starts again from nothing."""
        taken = ErrorCounts(
            self.failures, self.errors, self.skipped, self.retries, self.logged,
            self.dlq_requests, self.dlq_failures, self.last_error_ms,
        )
        self.failures = self.errors = self.skipped = self.retries = self.logged = 0
        self.dlq_requests = self.dlq_failures = self.last_error_ms = 0
        return taken

    def __bool__(self) -> bool:
        return any((
            self.failures, self.errors, self.skipped, self.retries, self.logged,
            self.dlq_requests, self.dlq_failures, self.last_error_ms,
        ))


class _ErrorFamilies:
    """Kafka Connect's task-error-metrics (labels: connector, task)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(metric: str, doc: str) -> Counter:
            name = "kafka_connect_task_error_" + metric.replace("-", "_")
            return Counter(name, f"{doc} ({metric}).", TASK_LABELS, registry=registry)

        self.failures = counter("total-record-failures", "Failed attempts, retries included")
        self.errors = counter("total-record-errors", "Records that ended in failure")
        self.skipped = counter("total-records-skipped", "Records skipped after a failure")
        self.retries = counter("total-retries", "Retries of retriable failures")
        self.logged = counter("total-errors-logged", "Failures logged")
        self.dlq_requests = counter(
            "deadletterqueue-produce-requests", "Records sent to the dead-letter queue"
        )
        self.dlq_failures = counter(
            "deadletterqueue-produce-failures", "Records the dead-letter queue could not take"
        )
        self.last_error = Gauge(
            "kafka_connect_task_error_last_error_timestamp",
            "Epoch ms of the task's last record failure (last-error-timestamp).",
            TASK_LABELS,
            registry=registry,
        )
        self.labelled: tuple[Counter | Gauge, ...] = (
            self.failures, self.errors, self.skipped, self.retries, self.logged,
            self.dlq_requests, self.dlq_failures, self.last_error,
        )

    def add(self, labels: tuple[str, str], counts: ErrorCounts) -> None:
        pairs = (
            (self.failures, counts.failures), (self.errors, counts.errors),
            (self.skipped, counts.skipped), (self.retries, counts.retries),
            (self.logged, counts.logged), (self.dlq_requests, counts.dlq_requests),
            (self.dlq_failures, counts.dlq_failures),
        )
        for family, count in pairs:
            if count:
                family.labels(*labels).inc(count)
        if counts.last_error_ms:
            self.last_error.labels(*labels).set(counts.last_error_ms)


class _TaskFamilies:
    """The per-task metric families (labels: connector, task)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, TASK_LABELS, registry=registry)

        self.errors = _ErrorFamilies(registry)
        self.source_poll = counter(
            "kafka_connect_source_task_source_record_poll_total",
            "Records polled from the source task (source-record-poll-total).",
        )
        self.source_write = counter(
            "kafka_connect_source_task_source_record_write_total",
            "Records written to Kafka by the source task (source-record-write-total).",
        )
        self.sink_read = counter(
            "kafka_connect_sink_task_sink_record_read_total",
            "Records read from Kafka for the sink task (sink-record-read-total).",
        )
        self.sink_send = counter(
            "kafka_connect_sink_task_sink_record_send_total",
            "Records put to the sink task (sink-record-send-total).",
        )
        self.commit_success = counter(
            "kafka_connect_connector_task_offset_commit_success_total",
            "Offset commits that succeeded: a source batch's offsets, a sink task's group "
            "commit, an exactly-once transaction (offset-commit-success-percentage).",
        )
        self.commit_failure = counter(
            "kafka_connect_connector_task_offset_commit_failure_total",
            "Offset commits that failed (offset-commit-failure-percentage).",
        )
        self.commit_time = Histogram(
            "kafka_connect_connector_task_offset_commit_time_seconds",
            "Time each successful offset commit took (offset-commit-avg/max-time-ms).",
            TASK_LABELS,
            registry=registry,
            buckets=SECONDS_BUCKETS,
        )
        self.batch_size = Histogram(
            "kafka_connect_connector_task_batch_size",
            "Records in each batch the task moved (batch-size-avg/max).",
            TASK_LABELS,
            registry=registry,
            buckets=BATCH_SIZE_BUCKETS,
        )
        self.batch_time = Histogram(
            "connect_grpc_task_batch_seconds",
            "Time each batch's move took (a source's produce, a sink's read and put), by "
            "where it ran: driver, spark_job or spark_task (the task's hosting Spark task).",
            (*TASK_LABELS, "runs_on"),
            registry=registry,
            buckets=SECONDS_BUCKETS,
        )
        self.labelled: tuple[Counter | Gauge | Histogram, ...] = (
            self.source_poll, self.source_write, self.sink_read, self.sink_send,
            self.commit_success, self.commit_failure, self.commit_time, self.batch_size,
            *self.errors.labelled,
        )


class TaskMetrics:
    """One task's series, reported by its loop once per batch or commit (never per
    record: the hot path stays a few dictionary look-ups per batch)."""

    def __init__(
        self, families: _TaskFamilies, task: TaskId, plugins: PluginMetricsStore | None = None
    ) -> None:
        self._families = families
        self._task = task
        self._plugins = plugins
        self._labels = (task.connector, str(task.task))

    def plugin_metrics(self, tags: Mapping[str, str]) -> PluginMetrics:
        """A new PluginMetrics of one of the task's plugins (KIP-877), exported with the
        worker's metrics until the task stops (``WorkerMetrics.forget_task``)."""
        if self._plugins is None:
            return PluginMetrics(tags)
        return self._plugins.open(tags, self._task.connector, self._task.task)

    @classmethod
    def unexported(cls, task: TaskId) -> TaskMetrics:
        """Series of a registry of their own, which no endpoint serves (a runner built
        without its worker's metrics, as unit tests build them)."""
        return WorkerMetrics().task(task)

    def polled(self, records: int) -> None:
        """The source task's ``poll`` returned ``records`` records."""
        self._families.source_poll.labels(*self._labels).inc(records)

    def written(self, records: int, seconds: float, runs_on: str) -> None:
        """A source batch of ``records`` was written to Kafka in ``seconds``."""
        self._families.source_write.labels(*self._labels).inc(records)
        self._batch(records, seconds, runs_on)

    def put(self, records: int, seconds: float, runs_on: str) -> None:
        """A sink batch of ``records`` was read from Kafka and put to the task in
        ``seconds``."""
        families, labels = self._families, self._labels
        families.sink_read.labels(*labels).inc(records)
        families.sink_send.labels(*labels).inc(records)
        self._batch(records, seconds, runs_on)

    def add_counts(self, *, written: int = 0, read: int = 0, sent: int = 0) -> None:
        """Records counted by a task whose batches are not timed here (a Java task's, from
        Kafka's worker metrics): written to Kafka (a source's), read from Kafka and put to
        the task (a sink's)."""
        families, labels = self._families, self._labels
        pairs = (
            (families.source_write, written), (families.sink_read, read),
            (families.sink_send, sent),
        )
        for family, count in pairs:
            if count:
                family.labels(*labels).inc(count)

    def batch_moved(self, records: int) -> None:
        """A batch of ``records`` whose move is not timed here (a Java task's)."""
        self._families.batch_size.labels(*self._labels).observe(records)

    def _batch(self, records: int, seconds: float, runs_on: str) -> None:
        self._families.batch_size.labels(*self._labels).observe(records)
        self._families.batch_time.labels(*self._labels, runs_on).observe(seconds)

    @contextlib.contextmanager
    def offset_commit(self) -> Iterator[None]:
        """Times the block as an offset commit: a success if it returns, a failure if it
        raises (the exception goes on)."""
        began = time.monotonic()
        try:
            yield
        except BaseException:
            self.commit_failed()
            raise
        self.commit_succeeded(time.monotonic() - began)

    def commit_succeeded(self, seconds: float) -> None:
        self._families.commit_success.labels(*self._labels).inc()
        self._families.commit_time.labels(*self._labels).observe(seconds)

    def commit_failed(self) -> None:
        self._families.commit_failure.labels(*self._labels).inc()

    def add_commits(self, tally: CommitTally) -> None:
        """Commits counted elsewhere (see CommitTally)."""
        for seconds in tally.succeeded:
            self.commit_succeeded(seconds)
        if tally.failed:
            self._families.commit_failure.labels(*self._labels).inc(tally.failed)


    def add_errors(self, counts: ErrorCounts) -> None:
        """Record errors counted since the last batch (see ErrorCounts)."""
        if counts:
            self._families.errors.add(self._labels, counts)


class WorkerMetrics:
    """The metrics of one worker, in ``registry`` (a new one by default)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._tasks = _TaskFamilies(self.registry)
        #: The metrics the worker's plugins register (KIP-877), exported at each scrape.
        self.plugins = PluginMetricsStore()
        self.registry.register(PluginMetricsCollector(self.plugins))
        #: The auto-restart policy's restarts and progress, exported by the deciding worker.
        self.auto_restarts = AutoRestartMetrics(self.registry)

    def task(self, task: TaskId) -> TaskMetrics:
        return TaskMetrics(self._tasks, task, self.plugins)

    def forget_task(self, task: TaskId) -> None:
        """Drops the task's series (it stopped on this worker, as Kafka Connect removes a
        stopped task's metric group): a task started again counts from zero."""
        self.plugins.close_owner(task.connector, task.task)
        labels = (task.connector, str(task.task))
        for family in self._tasks.labelled:
            with contextlib.suppress(KeyError):
                family.remove(*labels)
        for runs_on in (ON_DRIVER, ON_SPARK_JOB, ON_SPARK_TASK):
            with contextlib.suppress(KeyError):
                self._tasks.batch_time.remove(*labels, runs_on)

    def watch_worker(self, worker: WorkerView) -> None:
        """Exports the worker's instance counts and states, read at each scrape."""
        self.registry.register(_InstanceCollector(worker))

    def watch_cluster(self, cluster: ClusterView) -> None:
        """Exports the rebalance metrics of a distributed worker, read at each scrape."""
        self.registry.register(_RebalanceCollector(cluster))


class _InstanceCollector(Collector):
    def __init__(self, worker: WorkerView) -> None:
        self._worker = worker

    def collect(self) -> Iterable[Metric]:
        connectors, tasks = self._worker.instance_states()
        yield GaugeMetricFamily(
            "kafka_connect_worker_connector_count",
            "Connectors run by this worker (connector-count).",
            value=len(connectors),
        )
        yield GaugeMetricFamily(
            "kafka_connect_worker_task_count",
            "Tasks run by this worker (task-count).",
            value=len(tasks),
        )
        connector_status = GaugeMetricFamily(
            "kafka_connect_connector_status",
            "1 for the status of each connector this worker runs (connector-metrics status).",
            labels=["connector", "status"],
        )
        for name, state in sorted(connectors.items()):
            connector_status.add_metric([name, status_label(state)], 1)
        yield connector_status
        task_status = GaugeMetricFamily(
            "kafka_connect_connector_task_status",
            "1 for the status of each task this worker runs (connector-task-metrics status).",
            labels=["connector", "task", "status"],
        )
        for task, state in sorted(tasks.items(), key=lambda item: _task_order(item[0])):
            task_status.add_metric([task.connector, str(task.task), status_label(state)], 1)
        yield task_status
        yield from _task_counts(tasks)
        yield _placement_counts(self._worker.task_placements())


def _placement_counts(placements: Mapping[TaskId, PlacementKind]) -> Metric:
    placed = Tally(placements.values())
    family = GaugeMetricFamily(
        "connect_grpc_worker_task_placement_count",
        "Tasks this worker runs, by where they live: on the driver (a thread of the worker) "
        "or in a Spark executor (hosted).",
        labels=["placement"],
    )
    for kind in PlacementKind:
        family.add_metric([kind.value], placed[kind])
    return family


def _task_order(task: TaskId) -> tuple[str, int]:
    return task.connector, task.task


#: Per-connector task counts by state, as Kafka Connect's connector-*-task-count.
_COUNTED = {
    "running": State.RUNNING,
    "paused": State.PAUSED,
    "failed": State.FAILED,
    "restarting": State.RESTARTING,
}


def _task_counts(tasks: Mapping[TaskId, State]) -> Iterator[Metric]:
    totals = Tally(task.connector for task in tasks)
    by_state = Tally((task.connector, state) for task, state in tasks.items())
    total = GaugeMetricFamily(
        "kafka_connect_worker_connector_total_task_count",
        "Tasks of the connector this worker runs (connector-total-task-count).",
        labels=["connector"],
    )
    for connector, count in sorted(totals.items()):
        total.add_metric([connector], count)
    yield total
    for name, state in _COUNTED.items():
        family = GaugeMetricFamily(
            f"kafka_connect_worker_connector_{name}_task_count",
            f"Tasks of the connector this worker runs that are {name} "
            f"(connector-{name}-task-count).",
            labels=["connector"],
        )
        for connector in sorted(totals):
            family.add_metric([connector], by_state[(connector, state)])
        yield family


class _RebalanceCollector(Collector):
    def __init__(self, cluster: ClusterView) -> None:
        self._cluster = cluster

    def collect(self) -> Iterable[Metric]:
        state = self._cluster.rebalance_state()
        yield GaugeMetricFamily(
            "kafka_connect_worker_rebalance_epoch",
            "The generation of the assignment this worker runs (epoch).",
            value=state.generation,
        )
        yield CounterMetricFamily(
            "kafka_connect_worker_rebalance_completed_rebalances",
            "Rebalances (new assignments) this worker completed since it started "
            "(completed-rebalances-total).",
            value=state.completed_rebalances,
        )
        leader = GaugeMetricFamily(
            "kafka_connect_worker_rebalance_leader_info",
            "1, labelled with the leader's worker id (leader-name).",
            labels=["leader_name"],
        )
        if state.leader_id:
            leader.add_metric([state.leader_id], 1)
        yield leader
        yield GaugeMetricFamily(
            "connect_grpc_worker_is_leader",
            "1 while this worker carries out the leader's duties, else 0.",
            value=1 if state.is_leader else 0,
        )

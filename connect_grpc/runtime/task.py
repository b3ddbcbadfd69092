"""The task loop shared by source and sink tasks: one driver thread per task, each iteration
moving one bounded batch with at most one Spark job.

States: RUNNING (loop schedules batches), PAUSED (loop idles, launches no job), RETRYING (the
last batch failed on a retriable error, or the worker cannot reach Kafka: the loop tries
again after a back-off, and the trace says why), FAILED (a non-retriable error, or retrying
outlasted ``task.retry.timeout.ms``; the loop ends, the instance stays until it is stopped).
A batch that succeeds brings a RETRYING task back to RUNNING. ``Task.start`` and
``Task.stop`` are each called at most once, ``stop`` iff ``start`` returned normally.

Only the task's own failure ends its loop: a status report or a log line that fails (Kafka
away, a closed stream) is dropped and reported again later, never raised out of the loop;
should the loop end on anything else all the same, the task shows FAILED with the trace,
and the worker's watchdog (:meth:`TaskRunner.watch`) notices a loop that is gone while its
status says it runs.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Protocol, TypedDict, Unpack

import structlog

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.plugin_metrics import PluginMetrics
from connect_grpc.kernel.domain import (
    InstanceStatus,
    State,
    TargetState,
    TaskId,
    TaskPlacement,
)
from connect_grpc.kernel.traces import status_trace
from connect_grpc.logs.output import plugin_context
from connect_grpc.metrics.worker_metrics import TaskMetrics
from connect_grpc.pipeline.monitoring import monitor_pipeline, plugin_tags
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.pipeline.tolerance import event_sleep
from connect_grpc.runtime.kafka_monitor import KafkaOutage
from connect_grpc.runtime.retry import RetriableError, RetryPolicy, RetryTracker, is_retriable_error
from connect_grpc.runtime.task_host import TaskHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup

log = structlog.get_logger(__name__)

#: Seconds an idle or paused loop waits before looking for work again. It keeps looking
#: that often for IDLE_EAGER_S after its last batch that moved data, so that a record
#: trickling in soon after the last one is seen within it; then each idle turn doubles the
#: wait up to IDLE_SLEEP_MAX_S, and a turn that moves data starts over. So a busy task
#: looks again at once, and a thousand long-idle ones on a worker look twice a second each
#: rather than ten times (Kafka Connect's FileStreamSource waits 1 s when its file has
#: nothing new). A pause, resume or stop wakes the wait at once; a runner may wait for its
#: data instead (``TaskRunner.wait_for_work``: a sink, in its group member's fetch).
IDLE_SLEEP_S = 0.1
IDLE_SLEEP_MAX_S = 0.5
IDLE_EAGER_S = 1.0
#: Seconds between re-cancelling a stopping task's jobs while waiting for its loop.
CANCEL_INTERVAL_S = 0.5


class KafkaUnreachableError(RetriableError):
    """The worker's Kafka monitor says Kafka has not answered since the task last reached it."""

    def __init__(self, outage: KafkaOutage) -> None:
        super().__init__(unreachable_trace(outage))


def unreachable_trace(outage: KafkaOutage) -> str:
    return f"Kafka unreachable: {outage.reason}"


def _no_outage() -> KafkaOutage | None:
    return None


class TopicRecorder(Protocol):
    """Where tasks report the topics they use (KIP-558; the herder's ``StatusBoard``)."""

    def record_active_topics(self, task: TaskId, topics: Collection[str]) -> None:
        """Records each of ``topics`` the task's connector has no record of yet."""


class RunnerOptions(TypedDict, total=False):
    """How a task rides out failures (the worker passes them; defaults suit tests)."""

    #: ``task.retry.*``: how long retriable errors are retried, and the back-off.
    retry_policy: RetryPolicy
    #: The worker's view of Kafka (``KafkaMonitor.outage``).
    kafka_outage: Callable[[], KafkaOutage | None]
    clock: Callable[[], float]
    #: Where the task counts what it moves (the worker's metrics).
    metrics: TaskMetrics
    #: Where the task records the topics it uses (absent: ``topic.tracking.enable=false``).
    active_topics: TopicRecorder
    #: False when the task moves every batch in-process, never as a Spark job (a task that
    #: found no free slot to be hosted in): its loop then runs on a plain thread, with no
    #: JVM thread pinned to it and no jobs to tag or cancel. Default True.
    spark_jobs: bool


def for_cluster(
    options: RunnerOptions, conf: Mapping[str, str], worker: WorkerConfig
) -> RunnerOptions:
    """The options, less the worker's Kafka monitor when the task's clients use another
    cluster (a ``*.override.bootstrap.servers``): the monitor does not speak for it."""
    if conf.get("bootstrap.servers") == worker.bootstrap_servers:
        return options
    trimmed = options.copy()
    trimmed.pop("kafka_outage", None)
    return trimmed


class TaskRunner(abc.ABC):
    """Runs one task instance: start, the batch loop with its retries, pause/resume, stop.

    The one state machine of every task: a source's or a sink's runner supplies what a
    batch is (``prepare``, ``run_batch`` and the optional hooks), and ``host`` says where
    the plugin runs (``task_host``); start, stop, interrupts, statuses, retries and
    placement are this class's, the same for every host."""

    def __init__(
        self,
        setup: TaskSetup,
        host: TaskHost,
        clients: TaskClients,
        **options: Unpack[RunnerOptions],
    ) -> None:
        task_id = setup.id
        self.setup = setup
        self.id = task_id
        self.host = host
        self.plugin = host.plugin
        self.log = log.bind(
            connector=task_id.connector, task=task_id.task, worker_id=setup.worker_id
        )
        self._worker_id = setup.worker_id
        self._plugin_version = setup.plugin_version
        self._listener = clients.listener
        self._spark = clients.spark
        self._clock = options.get("clock", time.monotonic)
        self._retry = RetryTracker(options.get("retry_policy", RetryPolicy()), self._clock)
        self._kafka_outage = options.get("kafka_outage", _no_outage)
        self.metrics = options.get("metrics") or TaskMetrics.unexported(task_id)
        self._active_topics = options.get("active_topics")
        self._spark_jobs = options.get("spark_jobs", True)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._paused = True
        self._failed = False
        self._fail_trace = ""
        #: Why the task cannot move data now; non-empty means RETRYING (unless paused).
        self._retry_trace = ""
        #: When the task last exchanged with Kafka successfully (its own evidence, which
        #: outranks an outage the monitor saw begin earlier).
        self._kafka_ok_at = -math.inf
        self._reported: tuple[State, str, TaskPlacement | None] | None = None
        self._started = False
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._loop_done = False
        self._close_on_exit = False

    def _open_plugin_metrics(self, pipeline: TaskPipeline | None) -> PluginMetrics:
        """The task plugin's PluginMetrics (KIP-877), once the Monitorable plugins of its
        pipeline have theirs; all are exported until the task stops."""
        if pipeline is not None:
            monitor_pipeline(pipeline.plugins, self.id, self.metrics.plugin_metrics)
        return self.metrics.plugin_metrics(
            plugin_tags(self.id, self.id.connector, self.plugin, "task")
        )

    # hooks for source and sink tasks

    @abc.abstractmethod
    def prepare(self) -> None:
        """Initializes the plugin with its context and opens clients, before ``start``."""

    @abc.abstractmethod
    def run_batch(self) -> bool:
        """Moves at most one batch (one Spark job). Returns False when there was no work.

        Raises a retriable error (see ``retry.is_retriable_error``) for a failure worth
        retrying; the same batch must then be moved by a later call, nothing lost.
        """

    def wait_for_work(self, seconds: float) -> None:
        """Called after a turn that moved nothing, running or paused: waits up to
        ``seconds`` for a reason to look again, and returns at once on a pause, resume or
        stop. A runner that can be woken by its data (a sink) overrides it; an error it
        raises is logged and the wait done as here."""
        self._idle(seconds)

    def keep_alive(self) -> None:  # noqa: B027 - optional hook
        """Called on every loop turn, also when paused (e.g. to keep a group membership)."""

    def wind_down(self) -> None:  # noqa: B027 - optional hook
        """Called on every paused turn and once when the loop ends on a stop (not after a
        failure): a task whose work spans batches (an exactly-once source's open
        transaction) concludes it. An error raised on a paused turn is handled like a
        batch's; at the end it is logged."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Closes the task's Kafka clients, after ``Task.stop`` (the host is let go of
        after it)."""

    def recover_host(self) -> None:
        """Subclasses call it before a batch: a host that was lost is replaced, the plugin
        started there again (raises HostLostError, retriable, if the new one is lost too)."""
        if self.host.recover():
            self.log.warning("task_rehosted")

    def kafka_ok(self) -> None:
        """Subclasses call it after a successful exchange with Kafka."""
        self._kafka_ok_at = self._clock()

    def record_topics(self, topics: Collection[str]) -> None:
        """Subclasses call it with the topics a batch wrote to (source) or read from (sink).
        A failure is logged, never raised: tracking must not stop the data."""
        recorder = self._active_topics
        if recorder is None or not topics:
            return
        try:
            recorder.record_active_topics(self.id, topics)
        except Exception:
            self.log.warning("active_topics_not_recorded", topics=sorted(topics), exc_info=True)

    # lifecycle

    @property
    def state(self) -> State:
        with self._lock:
            return self._current()[0]

    def start(self, task_config: Mapping[str, str], target: TargetState) -> bool:
        """Starts the plugin and the loop thread. Returns False (reported FAILED) if it raised."""
        try:
            with self._plugin_context():
                self.prepare()
                self.plugin.start(task_config)
        except Exception as exc:
            self._fail(status_trace(exc))
            self._close_quietly()
            return False
        with self._lock:
            self._started = True
            self._paused = target is not TargetState.STARTED
            self._publish()
        self.log.info("task_started", state=self.state.value)
        self._thread = self._loop_thread(f"connect-task-{self.id.connector}-{self.id.task}")
        self._thread.start()
        return True

    def _loop_thread(self, name: str) -> threading.Thread:
        """The loop's thread: a pinned one (its JVM side released when it ends) for a task
        whose batches may be Spark jobs, else a plain one. Why: starting a pinned thread
        costs round trips to the JVM, 10-20 ms on a loaded 2-core machine, which a worker
        handed hundreds of tasks at once (a kill -9 of another worker) pays one after the
        other, and each holds a JVM thread and a Py4J connection for as long as it runs."""
        if self._spark_jobs:
            return self._spark.new_thread(self._run, name)
        return threading.Thread(target=self._run, name=name, daemon=True)

    def set_target(self, target: TargetState) -> None:
        """Pauses or resumes the loop. Idempotent; no effect on a failed or unstarted task."""
        paused = target is not TargetState.STARTED
        with self._lock:
            if self._failed or not self._started or paused == self._paused:
                return
            self._paused = paused
            self._retry_trace = ""
            self._publish()
        self._wake.set()
        self.log.info("task_paused" if paused else "task_resumed")

    def kafka_unreachable(self, outage: KafkaOutage) -> None:
        """The worker's monitor saw Kafka go away: a running task that has not reached Kafka
        since shows RETRYING at once, rather than when its in-flight batch times out."""
        if self._kafka_outage is _no_outage:
            return  # its clients use another cluster than the one the monitor watches
        with self._lock:
            if not self._started or self._failed or self._paused or self._retry_trace:
                return
            if outage.since <= self._kafka_ok_at:
                return
            self._retry_trace = unreachable_trace(outage)
            self._publish()
        self._wake.set()

    def request_stop(self) -> None:
        """Stops scheduling batches, cancels the running job and interrupts the host's
        current wait. Returns at once."""
        self._stopping.set()
        self._wake.set()
        self._cancel_jobs()
        self.host.interrupt()

    def _cancel_jobs(self) -> None:
        if self._spark_jobs:
            self._spark.cancel(self.id.connector, self.id.task)

    def finish_stop(self, connector_deleted: bool, timeout: float) -> None:
        """Waits for the loop (bounded), then stops the plugin once and closes the clients.

        A loop still inside a Kafka call when the wait ends closes the clients itself when
        that call returns: a client is never destroyed while a call on it is outstanding.
        """
        self.request_stop()
        loop_ended = self._join(timeout)
        with self._plugin_context():
            if self._started and not self._stopped:
                self._stopped = True
                try:
                    self.plugin.stop(connector_deleted)
                except Exception:
                    self.log.warning("task_stop_failed", exc_info=True)
            if loop_ended or not self._leave_close_to_loop():
                self._close_quietly()
        self.log.info("task_stopped", connector_deleted=connector_deleted)

    # the loop

    def watch(self) -> None:
        """The worker's watchdog, now and then: a loop that ended although the task neither
        failed nor was stopped is reported FAILED, and a status whose report failed is
        reported again. A task still starting, or stopping, is left alone (its status is
        its starter's or its stopper's to report)."""
        with self._lock:
            if not self._started or self._stopping.is_set():
                return
            ended = self._loop_done and not self._failed
            if not ended:
                self._publish()
                return
        self._fail(
            "The task's loop is no longer running although the task was not stopped and "
            "reported no failure; restart the task."
        )

    def _plugin_context(self) -> contextlib.AbstractContextManager[None]:
        """Names this task in what the calling thread logs and its plugin prints."""
        return plugin_context(self.id.connector, self.id.task)

    def _run(self) -> None:
        try:
            with self._plugin_context():
                self._loop()
        except BaseException as exc:
            self._fail(status_trace(exc, "The task's loop ended on an unexpected error"))
        finally:
            with self._lock:
                self._loop_done = True
                close = self._close_on_exit
            if close:
                self._close_quietly()

    def _leave_close_to_loop(self) -> bool:
        """True if the loop is still running and will close the clients when it ends."""
        with self._lock:
            if self._loop_done:
                return False
            self._close_on_exit = True
        self.log.warning("task_clients_closed_by_loop")
        return True

    def _loop(self) -> None:
        try:
            if self._spark_jobs:
                self._spark.bind_thread(self.id.connector, self.id.task)
        except Exception as exc:
            self._fail(status_trace(exc))
            return
        idle_s = IDLE_SLEEP_S
        idle_since: float | None = None
        while not self._stopping.is_set():
            try:
                moved = self._turn()
            except Exception as exc:
                if self._stopping.is_set():
                    break
                if not self._retry_later(exc):
                    return
                continue
            if moved:
                idle_s, idle_since = IDLE_SLEEP_S, None
                continue
            now = self._clock()
            if idle_since is None:
                idle_since = now
            self._wait_quietly(idle_s)
            if now - idle_since >= IDLE_EAGER_S:
                idle_s = min(2 * idle_s, IDLE_SLEEP_MAX_S)
        self._wind_down_quietly()

    def _wait_quietly(self, seconds: float) -> None:
        try:
            self.wait_for_work(seconds)
        except Exception as exc:
            self._log_quietly(logging.DEBUG, "task_idle_wait_failed", error=repr(exc))
            self._idle(seconds)

    def _wind_down_quietly(self) -> None:
        try:
            self.wind_down()
        except Exception:
            self.log.warning("task_wind_down_failed", exc_info=True)

    def _turn(self) -> bool:
        """One loop turn: keep the membership alive, then (unless paused) one batch."""
        self.keep_alive()
        if self._paused:
            self.wind_down()
            self._retry.reset()
            return False
        outage = self._kafka_outage()
        if outage is not None and outage.since > self._kafka_ok_at:
            raise KafkaUnreachableError(outage)
        moved = self.run_batch()
        self._succeeded()
        return moved

    def _retry_later(self, exc: Exception) -> bool:
        """Shows RETRYING and waits out the back-off. False (the task is then FAILED) when the
        error is not retriable or retrying has lasted longer than the policy allows."""
        trace = str(exc) if isinstance(exc, KafkaUnreachableError) else status_trace(exc)
        if not is_retriable_error(exc):
            self._fail(trace)
            return False
        delay = self._retry.on_failure()
        if delay is None:
            self._fail(self._gave_up(trace))
            return False
        with self._lock:
            self._retry_trace = trace
            self._publish()
        self._log_quietly(
            logging.WARNING if self._retry.attempts == 1 else logging.DEBUG,
            "task_retrying",
            error=f"{type(exc).__name__}: {exc}",
            attempt=self._retry.attempts,
            backoff_s=round(delay, 3),
        )
        self._idle(delay)
        return True

    def _log_quietly(self, level: int, event: str, **fields: object) -> None:
        """Logs from inside the loop: a log line that cannot be written is dropped."""
        with contextlib.suppress(Exception):
            self.log.log(level, event, **fields)

    def _gave_up(self, trace: str) -> str:
        elapsed = self._retry.elapsed()
        return (
            f"Retried a retriable error for {elapsed:.1f} s ({self._retry.attempts} attempts); "
            f"the task {self._retry.policy.describe()}. Last error: {trace}"
        )

    def _succeeded(self) -> None:
        self._retry.reset()
        with self._lock:
            if not self._retry_trace:
                return
            self._retry_trace = ""
            self._publish()
        self._log_quietly(logging.INFO, "task_recovered")

    def _idle(self, seconds: float) -> None:
        self._wake.wait(seconds)
        self._wake.clear()

    def _join(self, timeout: float) -> bool:
        """Waits for the loop to end; returns whether it did."""
        thread = self._thread
        if thread is None:
            return True
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline:
            thread.join(min(CANCEL_INTERVAL_S, max(0.0, deadline - time.monotonic())))
            if thread.is_alive():
                self._cancel_jobs()
        if thread.is_alive():
            self.log.warning("task_loop_not_stopped", timeout_s=timeout)
            return False
        return True

    # status

    def _current(self) -> tuple[State, str]:
        if self._failed:
            return State.FAILED, self._fail_trace
        if self._paused:
            return State.PAUSED, ""
        if self._retry_trace:
            return State.RETRYING, self._retry_trace
        return State.RUNNING, ""

    def placement(self) -> TaskPlacement | None:
        """Where the task's plugin lives (None while its host is lost and it is being
        hosted again)."""
        return self.host.placement()

    def _publish(self) -> None:
        """Reports the current state if it (or its trace, or where the task runs) changed
        since the last report that succeeded. Never raises: a failed report is tried again
        by the next call (the watchdog's, at the latest). Call under the lock."""
        state, trace = self._current()
        placement = self.placement()
        current = (state, trace, placement)
        if current == self._reported:
            return
        status = InstanceStatus(
            state, self._worker_id, trace, placement, version=self._plugin_version
        )
        try:
            self._listener.on_task_status(self.id, status)
        except Exception as exc:
            self._log_quietly(
                logging.WARNING, "task_status_not_reported", state=state.value, error=repr(exc)
            )
            return
        self._reported = current

    def _fail(self, trace: str) -> None:
        with self._lock:
            self._failed = True
            self._fail_trace = trace
            self._publish()
        self._log_quietly(logging.ERROR, "task_failed", trace=trace)

    def _close_quietly(self) -> None:
        """Closes the task's clients, then lets go of its host."""
        try:
            try:
                self.close()
            finally:
                self.host.close()
        except Exception:
            self.log.warning("task_close_failed", exc_info=True)


class DriverSite:
    """The driver as the place a task's record loop runs (``task_host.LoopSite``): the
    runner's stop event, and the task's metrics."""

    def __init__(self, runner: TaskRunner) -> None:
        self._task_runner = runner
        self.stopping: Callable[[], bool] = runner._stopping.is_set
        self.backoff: Callable[[int], bool] = event_sleep(runner._stopping)

    def plugin_metrics(self, pipeline: TaskPipeline | None) -> PluginMetrics | None:
        return self._task_runner._open_plugin_metrics(pipeline)

"""The task loop shared by source and sink tasks: one driver thread per task, each iteration
moving one bounded batch with at most one Spark job.

States: RUNNING (loop schedules batches), PAUSED (loop idles, launches no job), FAILED (an
iteration raised; the loop ends, the instance stays until it is stopped). ``Task.start`` and
``Task.stop`` are each called at most once, ``stop`` iff ``start`` returned normally.
"""

from __future__ import annotations

import abc
import threading
import time
import traceback
from collections.abc import Mapping

import structlog

from connect_grpc.connectors.api import Task
from connect_grpc.domain import InstanceStatus, State, TargetState, TaskId
from connect_grpc.runtime.connector import StatusListener
from connect_grpc.runtime.spark import SparkRuntime

log = structlog.get_logger(__name__)

#: Seconds an idle or paused loop sleeps before looking for work again.
IDLE_SLEEP_S = 0.1
#: Seconds between re-cancelling a stopping task's jobs while waiting for its loop.
CANCEL_INTERVAL_S = 0.5


class TaskRunner(abc.ABC):
    """Runs one task instance: start, the batch loop, pause/resume, stop."""

    def __init__(
        self,
        task_id: TaskId,
        plugin: Task,
        worker_id: str,
        listener: StatusListener,
        spark: SparkRuntime,
    ) -> None:
        self.id = task_id
        self.plugin = plugin
        self.log = log.bind(connector=task_id.connector, task=task_id.task, worker_id=worker_id)
        self._worker_id = worker_id
        self._listener = listener
        self._spark = spark
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._paused = True
        self._failed = False
        self._started = False
        self._stopped = False
        self._thread: threading.Thread | None = None

    # hooks for source and sink tasks

    @abc.abstractmethod
    def prepare(self) -> None:
        """Initializes the plugin with its context and opens clients, before ``start``."""

    @abc.abstractmethod
    def run_batch(self) -> bool:
        """Moves at most one batch (one Spark job). Returns False when there was no work."""

    def keep_alive(self) -> None:  # noqa: B027 - optional hook
        """Called on every loop turn, also when paused (e.g. to keep a group membership)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Closes the task's Kafka clients, after ``Task.stop``."""

    # lifecycle

    @property
    def state(self) -> State:
        if self._failed:
            return State.FAILED
        return State.PAUSED if self._paused else State.RUNNING

    def start(self, task_config: Mapping[str, str], target: TargetState) -> bool:
        """Starts the plugin and the loop thread. Returns False (reported FAILED) if it raised."""
        try:
            self.prepare()
            self.plugin.start(task_config)
        except Exception:
            self._fail(traceback.format_exc())
            self._close_quietly()
            return False
        self._started = True
        self._paused = target is not TargetState.STARTED
        self.log.info("task_started", state=self.state.value)
        self._report(self.state)
        name = f"connect-task-{self.id.connector}-{self.id.task}"
        self._thread = self._spark.new_thread(self._run, name)
        self._thread.start()
        return True

    def set_target(self, target: TargetState) -> None:
        """Pauses or resumes the loop. Idempotent; no effect on a failed or unstarted task."""
        paused = target is not TargetState.STARTED
        with self._lock:
            if self._failed or not self._started or paused == self._paused:
                return
            self._paused = paused
            self._report(self.state)
        self._wake.set()
        self.log.info("task_paused" if paused else "task_resumed")

    def request_stop(self) -> None:
        """Stops scheduling batches and cancels the running job. Returns at once."""
        self._stopping.set()
        self._wake.set()
        self._spark.cancel(self.id.connector, self.id.task)

    def finish_stop(self, connector_deleted: bool, timeout: float) -> None:
        """Waits for the loop (bounded), then stops the plugin once and closes the clients."""
        self.request_stop()
        self._join(timeout)
        if self._started and not self._stopped:
            self._stopped = True
            try:
                self.plugin.stop(connector_deleted)
            except Exception:
                self.log.warning("task_stop_failed", exc_info=True)
        self._close_quietly()
        self.log.info("task_stopped", connector_deleted=connector_deleted)

    # the loop

    def _run(self) -> None:
        try:
            self._spark.bind_thread(self.id.connector, self.id.task)
        except Exception:
            self._fail(traceback.format_exc())
            return
        while not self._stopping.is_set():
            try:
                self.keep_alive()
                moved = False if self._paused else self.run_batch()
            except Exception:
                if not self._stopping.is_set():
                    self._fail(traceback.format_exc())
                return
            if not moved:
                self._idle()

    def _idle(self) -> None:
        self._wake.wait(IDLE_SLEEP_S)
        self._wake.clear()

    def _join(self, timeout: float) -> None:
        thread = self._thread
        if thread is None:
            return
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline:
            thread.join(min(CANCEL_INTERVAL_S, max(0.0, deadline - time.monotonic())))
            if thread.is_alive():
                self._spark.cancel(self.id.connector, self.id.task)
        if thread.is_alive():
            self.log.warning("task_loop_not_stopped", timeout_s=timeout)

    def _fail(self, trace: str) -> None:
        with self._lock:
            self._failed = True
            self._report(State.FAILED, trace)
        self.log.error("task_failed", trace=trace)

    def _report(self, state: State, trace: str = "") -> None:
        self._listener.on_task_status(self.id, InstanceStatus(state, self._worker_id, trace))

    def _close_quietly(self) -> None:
        try:
            self.close()
        except Exception:
            self.log.warning("task_close_failed", exc_info=True)

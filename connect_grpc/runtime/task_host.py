"""Where a task's plugin runs, as its runner sees it: a ``TaskHost``. The runner (one state
machine, ``task.TaskRunner``) drives every host through the same calls, so statuses,
retries, stop time-outs and placement are the same wherever the plugin lives.

Hosts: ``DriverHost`` (the plugin is an object of this process, called from the task's
loop thread) and ``hosting.link.ExecutorHost`` (the plugin lives in a long-running Spark
task with an interpreter of its own; the driver calls it over a connection). A JVM host (a
Spark task whose loop runs in the executor's JVM, for Java plugins) is a third
implementation of the same protocol.
"""

from __future__ import annotations

from typing import Any, Protocol

from connect_grpc.connectors.api import Task
from connect_grpc.connectors.plugin_metrics import PluginMetrics
from connect_grpc.kernel.domain import TaskPlacement
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.runtime.placement import driver_placement

__all__ = ["DriverHost", "LoopSite", "RemoteTaskHost", "TaskHost"]


class TaskHost(Protocol):
    """The place a task's plugin runs. Called from the task's runner only."""

    @property
    def plugin(self) -> Task:
        """The plugin, or the driver's stand-in for one that lives elsewhere (its ``start``
        and ``stop`` are run there)."""

    def open(self) -> None:
        """Makes the place ready for the plugin to start (connects to it)."""

    def placement(self) -> TaskPlacement | None:
        """Where the plugin lives now; None while it lives nowhere (its host was lost and
        a new one has not connected yet)."""

    def recover(self) -> bool:
        """After the place was lost: a new one, with the plugin started there again with
        the same config. Returns whether it did (False: nothing was lost)."""

    def interrupt(self) -> None:
        """The task is stopping: the place gives up its current wait. Any thread."""

    def close(self) -> None:
        """Lets go of the place, after the plugin stopped (or could not be)."""


class RemoteTaskHost(TaskHost, Protocol):
    """A host in a process of its own (an executor's Python worker, or its JVM): the
    plugin moves each batch there, and a batch is one ``call``. The runners
    (``source_task.SourceTaskRunner``, ``sink_task.SinkTaskRunner``) drive any such host
    through its record loop's remote end (``source_loop.RemoteSourceLoop``,
    ``sink_loop.RemoteSinkLoop``)."""

    @property
    def broken(self) -> bool:
        """Whether the host was lost (a call now raises a retriable HostLostError)."""

    def call(self, name: str, *args: Any) -> Any:
        """Runs ``name`` on the host and returns its value; raises what it raised."""


class DriverHost:
    """The plugin runs on the driver, called from the task's loop thread."""

    def __init__(self, plugin: Task) -> None:
        self.plugin = plugin

    def open(self) -> None:
        return None

    def placement(self) -> TaskPlacement | None:
        return driver_placement()

    def recover(self) -> bool:
        return False  # the driver is never lost while its tasks run

    def interrupt(self) -> None:
        return None

    def close(self) -> None:
        return None


class LoopSite(Protocol):
    """The place a task's record loop runs (``source_loop``, ``sink_loop``), as the loop
    sees it: what every host gives it. Each kind adds what it needs (``SourceSite``,
    ``SinkSite``)."""

    def stopping(self) -> bool:
        """Whether the task was asked to stop."""

    def backoff(self, delay_ms: int) -> bool:
        """The pipeline's retry back-off: sleeps ``delay_ms`` unless the task is asked to
        stop; returns whether it was."""

    def plugin_metrics(self, pipeline: TaskPipeline | None) -> PluginMetrics | None:
        """The plugin's metrics (KIP-877), once the pipeline's plugins have theirs."""

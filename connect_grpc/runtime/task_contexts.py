"""The contexts a task's plugin is initialized with, wherever it runs: a source's
(``SourceTaskContext``: its offset reader and, with exactly-once, its transaction context)
and a sink's (``SinkTaskContext``: its errant record reporter)."""

from __future__ import annotations

from connect_grpc.connectors.api import OffsetReader, TransactionContext
from connect_grpc.connectors.plugin_metrics import PluginMetrics
from connect_grpc.kernel.domain import TaskId
from connect_grpc.pipeline.errant import ErrantRecordReporter

__all__ = ["SinkTaskContext", "SourceTaskContext"]


class _TaskContext:
    """What a source's and a sink's context share: the task's identity and its plugin's
    metrics (KIP-877; unexported ones where none are given)."""

    def __init__(self, task_id: TaskId, plugin_metrics: PluginMetrics | None) -> None:
        self._id = task_id
        self._plugin_metrics = plugin_metrics or PluginMetrics({})

    @property
    def plugin_metrics(self) -> PluginMetrics:
        return self._plugin_metrics

    @property
    def task_id(self) -> int:
        return self._id.task

    @property
    def connector_name(self) -> str:
        return self._id.connector


class SourceTaskContext(_TaskContext):
    def __init__(
        self,
        task_id: TaskId,
        reader: OffsetReader,
        transaction_context: TransactionContext | None = None,
        plugin_metrics: PluginMetrics | None = None,
    ) -> None:
        super().__init__(task_id, plugin_metrics)
        self._reader = reader
        self._transaction_context = transaction_context

    @property
    def offset_reader(self) -> OffsetReader:
        return self._reader

    @property
    def transaction_context(self) -> TransactionContext | None:
        return self._transaction_context


class SinkTaskContext(_TaskContext):
    def __init__(
        self,
        task_id: TaskId,
        errant: ErrantRecordReporter | None = None,
        plugin_metrics: PluginMetrics | None = None,
    ) -> None:
        super().__init__(task_id, plugin_metrics)
        self._errant = errant

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """KIP-610: reports records the task cannot write to the connector's dead-letter
        queue and log; None unless the connector has one or logs errors."""
        return self._errant

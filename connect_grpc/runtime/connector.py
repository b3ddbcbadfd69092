"""One connector instance on this worker: its plugin object and its lifecycle.

``Connector.start`` and ``Connector.stop`` are each called at most once per ``start`` that
returned normally: ``stop`` runs iff the plugin is started (start returned, not yet stopped).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Protocol

import structlog

from connect_grpc.connectors.api import Connector
from connect_grpc.connectors.plugin_metrics import PluginMetrics
from connect_grpc.connectors.plugin_versions import instance_version
from connect_grpc.kernel.domain import InstanceStatus, State, TargetState, TaskId
from connect_grpc.kernel.traces import status_trace
from connect_grpc.logs.output import plugin_context

log = structlog.get_logger(__name__)


class StatusListener(Protocol):
    """Receives the state of every connector and task instance this worker runs."""

    def on_connector_status(self, connector: str, status: InstanceStatus) -> None: ...

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None: ...

    def on_reconfiguration_requested(self, connector: str) -> None:
        """The connector asked for its task configs to be computed again."""

    def on_config_expired(self, connector: str) -> None:
        """The values a connector's config references resolved to have run out (their
        provider's time to live) and its ``config.action.reload`` is ``restart``."""


class _Context:
    """The ConnectorContext given to the plugin."""

    def __init__(self, instance: ConnectorInstance) -> None:
        self._instance = instance

    def request_task_reconfiguration(self) -> None:
        self._instance.log.info("task_reconfiguration_requested")
        self._instance.listener.on_reconfiguration_requested(self._instance.name)

    def raise_error(self, error: BaseException) -> None:
        self._instance.fail(status_trace(error))

    @property
    def plugin_metrics(self) -> PluginMetrics:
        return self._instance.plugin_metrics


class ConnectorInstance:
    """A plugin connector, started or not, and the state last reported for it."""

    def __init__(
        self,
        name: str,
        plugin: Connector,
        config: Mapping[str, str],
        worker_id: str,
        listener: StatusListener,
        *,
        raw_config: Mapping[str, str] | None = None,
        plugin_metrics: PluginMetrics | None = None,
    ) -> None:
        """``config`` is what the plugin starts with (references resolved); ``raw_config``
        the stored config it came from (by default ``config``); ``plugin_metrics`` the
        plugin's own metrics (unexported by default), closed by ``shutdown``."""
        self.name = name
        self.plugin_metrics = plugin_metrics or PluginMetrics({"connector": name})
        self.plugin = plugin
        self.config = dict(config)
        self.raw_config = dict(config if raw_config is None else raw_config)
        self.log = log.bind(connector=name, worker_id=worker_id)
        self._worker_id = worker_id
        self.listener = listener
        self._lock = threading.RLock()
        self._started = False
        self._state = State.UNASSIGNED
        plugin.initialize(_Context(self))

    @property
    def state(self) -> State:
        return self._state

    @property
    def running(self) -> bool:
        return self._state is State.RUNNING

    def transition(self, target: TargetState) -> bool:
        """Brings the instance to ``target``; returns False iff starting it failed."""
        with self._lock, plugin_context(self.name):
            if target is TargetState.STARTED:
                return self._start()
            self._stop_plugin(connector_deleted=False)
            state = State.PAUSED if target is TargetState.PAUSED else State.STOPPED
            if self._state is not state:
                self._report(state)
            return True

    def shutdown(self, connector_deleted: bool) -> None:
        """Stops the plugin if it is started. Reports nothing."""
        with self._lock, plugin_context(self.name):
            try:
                self._stop_plugin(connector_deleted)
            finally:
                self.plugin_metrics.close()

    def fail(self, trace: str) -> None:
        with self._lock:
            self.log.error("connector_failed", trace=trace)
            self._report(State.FAILED, trace)

    def _start(self) -> bool:
        if self._started and self._state is State.RUNNING:
            return True
        if self._started:
            # FAILED through context.raise_error: restart the plugin.
            self._stop_plugin(connector_deleted=False)
        try:
            self.plugin.start(self.config)
        except Exception as exc:
            self.fail(status_trace(exc))
            return False
        self._started = True
        self.log.info("connector_started")
        self._report(State.RUNNING)
        return True

    def _stop_plugin(self, connector_deleted: bool) -> None:
        if not self._started:
            return
        self._started = False
        try:
            self.plugin.stop(connector_deleted)
        except Exception:
            self.log.warning("connector_stop_failed", exc_info=True)
        self.log.info("connector_stopped", connector_deleted=connector_deleted)

    def _report(self, state: State, trace: str = "") -> None:
        self._state = state
        self.listener.on_connector_status(
            self.name, InstanceStatus(state, self._worker_id, trace, version=self._version())
        )

    def _version(self) -> str:
        """The plugin's version for its status; empty when its ``version()`` fails."""
        try:
            return instance_version(self.plugin)
        except Exception:
            return ""

"""How the worker makes a task's runner: the plugin's task class found through the
connector, the client-override policy checked again, the task's setup, clients and record
pipeline spec, and its host — a Java task's JVM host (``java_tasks``), an executor's when
``task.hosting=executor`` and a Spark task slot is free, else the driver.

The worker keeps the lifecycle (which tasks run, their guards, moves and stops); this
module only builds, so that what a task is made of reads in one place.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

from connect_grpc.config.worker import TASK_HOSTING_EXECUTOR, WorkerConfig
from connect_grpc.connectors.api import Connector, SinkTask, SourceTask, Task
from connect_grpc.connectors.plugin_versions import CONNECTOR_VERSION, instance_version
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.errors import ConnectError
from connect_grpc.metrics.worker_metrics import WorkerMetrics
from connect_grpc.pipeline.build import ConnectorPipeline
from connect_grpc.pipeline.spec import PipelineSpec, pipeline_spec
from connect_grpc.runtime import executor_hosts
from connect_grpc.runtime.connector import StatusListener
from connect_grpc.runtime.hosting.jobs import WarmHosts
from connect_grpc.runtime.hosting.serving import importable_name
from connect_grpc.runtime.hosting.slots import HostSlots, SlotWatcher
from connect_grpc.runtime.java_tasks import JavaTasks, is_java_task
from connect_grpc.runtime.kafka_monitor import KafkaMonitor
from connect_grpc.runtime.retry import RetryPolicy
from connect_grpc.runtime.sink_task import SinkTaskRunner
from connect_grpc.runtime.source_task import SourceTaskRunner
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task import RunnerOptions, TaskRunner, TopicRecorder
from connect_grpc.runtime.task_host import DriverHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from connect_grpc.runtime.transactions import ExactlyOnceSource
from connect_grpc.storage.base import OffsetStore

__all__ = ["IN_PROCESS", "PluginLoader", "TaskRunners"]

log = structlog.get_logger(__name__)

#: ``task.batch.local.max.records`` of a task that could not be hosted: every batch.
IN_PROCESS = 2**62


class PluginLoader(Protocol):
    """What the worker and its runners need of ``connectors.plugins.Plugins``."""

    def new_connector(self, name: str, version: str | None = None, /) -> Connector: ...


@dataclass(frozen=True, slots=True)
class TaskRunners:
    """Makes the worker's task runners; holds what every runner is made with."""

    config: WorkerConfig
    plugins: PluginLoader
    listener: StatusListener
    spark: SparkRuntime
    monitor: KafkaMonitor
    metrics: WorkerMetrics
    retry_policy: RetryPolicy
    host_slots: HostSlots
    slot_watcher: SlotWatcher
    warm_hosts: WarmHosts
    java_tasks: JavaTasks
    offsets_for: Callable[[Mapping[str, str]], OffsetStore]
    exactly_once: ExactlyOnceSource | None = None
    active_topics: TopicRecorder | None = None

    def options(self, task: TaskId) -> RunnerOptions:
        options: RunnerOptions = {
            "retry_policy": self.retry_policy,
            "kafka_outage": self.monitor.outage,
            "metrics": self.metrics.task(task),
        }
        if self.active_topics is not None:
            options["active_topics"] = self.active_topics
        return options

    def new_runner(
        self,
        task: TaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        task_count: int | None = None,
    ) -> TaskRunner:
        """The task's runner: its setup, clients and pipeline spec, and its host (an
        executor's when ``task.hosting=executor`` and a slot is free, else the driver).
        ``task_count``: the connector generation's number of tasks (a Java task's)."""
        class_name = connector_config.get("connector.class", "")
        task_class = self.plugins.new_connector(
            class_name, connector_config.get(CONNECTOR_VERSION)
        ).task_class()
        is_sink = _is_sink(task_class)
        _check_client_overrides(self.config, connector_config, is_sink)
        setup = TaskSetup(
            task, self.config.worker_id, self.config, connector_config, task_config,
            plugin_version=_task_version(task_class),
        )
        clients = self._clients(task, connector_config, is_sink)
        if is_java_task(task_class):
            return self.java_tasks.new_runner(
                setup, clients, is_sink, self.options(task), task_count
            )
        pipeline = self._pipeline(setup, is_sink)
        hosting = self.config.task_hosting == TASK_HOSTING_EXECUTOR
        hosted_name = importable_name(task_class) if hosting else None
        if hosted_name is not None and self.host_slots.try_acquire(task):
            log.info("task_hosted", worker_id=self.config.worker_id,
                     connector=task.connector, task=task.task)
            try:
                if is_sink:
                    host = executor_hosts.sink_host(
                        setup, hosted_name, clients, pipeline, self.warm_hosts
                    )
                    return SinkTaskRunner(setup, host, clients, pipeline, **self.options(task))
                host = executor_hosts.source_host(
                    setup, hosted_name, clients, pipeline, self.warm_hosts
                )
                return SourceTaskRunner(setup, host, clients, pipeline, **self.options(task))
            except BaseException:
                self.host_slots.release(task)
                raise
        if hosted_name is not None:
            log.info("task_waiting_for_slot", worker_id=self.config.worker_id,
                     connector=task.connector, task=task.task)
            self.slot_watcher.wait_for_slot(task)
        options = self.options(task)
        if hosting:
            # a task that could not get a slot of its own moves its batches in-process: the
            # slots are held by hosted tasks, and a batch job would wait for one
            in_process = replace(self.config, local_batch_max_records=IN_PROCESS)
            setup = replace(setup, worker_config=in_process)
            options["spark_jobs"] = False
        runner = SinkTaskRunner if is_sink else SourceTaskRunner
        return runner(setup, DriverHost(task_class()), clients, pipeline, **options)

    def _clients(
        self, task: TaskId, connector_config: Mapping[str, str], is_sink: bool
    ) -> TaskClients:
        """What the task reports to and moves data with: a source also its offsets and,
        with exactly-once support, its transactions."""
        if is_sink:
            return TaskClients(self.listener, self.spark)
        eos = self.exactly_once
        if eos is None:
            return TaskClients(
                self.listener,
                self.spark,
                offset_store=self.offsets_for(connector_config),
            )
        return TaskClients(
            self.listener,
            self.spark,
            offset_store=self.offsets_for(connector_config),
            transactions=eos.for_task(task, connector_config),
            await_fencing=functools.partial(eos.await_fenced_generation, task.connector),
        )

    def _pipeline(self, setup: TaskSetup, is_sink: bool) -> PipelineSpec | None:
        """The task's record pipeline spec: built where the task runs, when it starts (a
        pass-through pipeline leaves the task on the bytes path). None with a plugin loader
        that is not a ``Plugins`` (one that knows connectors only)."""
        if not isinstance(self.plugins, Plugins):
            return None
        connector_config = setup.connector_config
        factory = ConnectorPipeline(dict(connector_config), self.config, self.plugins, is_sink)
        return pipeline_spec(factory, setup.id, setup.producer_conf(), connector_config)


def _check_client_overrides(
    config: WorkerConfig, connector_config: Mapping[str, str], is_sink: bool
) -> None:
    """Fails the task when the worker's override policy refuses one of the connector's
    client overrides, as Kafka Connect checks again at each task's start: a connector
    stored before the policy was tightened must not run with what the policy now refuses."""
    errors = config.client_override_policy.errors(connector_config, sink=is_sink)
    if errors:
        details = "; ".join(f"{key}: {' '.join(msgs)}" for key, msgs in sorted(errors.items()))
        raise ConnectError(f"Client config overrides not allowed: {details}")


def _task_version(task_class: type[Task]) -> str:
    """The task plugin's ``version()`` for its statuses (an instance made for it: a hosted
    task's own lives in its executor); empty when that fails, which starting it reports."""
    try:
        return instance_version(task_class())
    except Exception:
        return ""


def _is_sink(task_class: type[Task]) -> bool:
    """Whether the task class is a sink's (a source's, else TypeError)."""
    if issubclass(task_class, SourceTask):
        return False
    if issubclass(task_class, SinkTask):
        return True
    raise TypeError(f"{task_class.__name__} is neither a SourceTask nor a SinkTask")

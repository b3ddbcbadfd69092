"""The executor host of a task (``hosting.link.ExecutorHost``), as the worker makes it for
a task it hosts in a Spark task of its own: what the host is built from there (the plugin's
name, its Kafka client configs, the pipeline spec) and what it may ask the driver."""

from __future__ import annotations

import functools
from typing import Any

from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.runtime.client_settings import reader_conf
from connect_grpc.runtime.hosting.jobs import WarmHosts
from connect_grpc.runtime.hosting.link import (
    ExecutorHost,
    HostedPlugin,
    HostedSinkPlugin,
    HostLink,
    offset_answerer,
    plugin_sys_path,
)
from connect_grpc.runtime.hosting.sink_host import SINK_HOST
from connect_grpc.runtime.hosting.source_host import SOURCE_HOST
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from connect_grpc.runtime.topic_creator import topic_creation_spec

__all__ = ["sink_host", "source_host"]


def source_host(
    setup: TaskSetup,
    task_class: str,
    clients: TaskClients,
    pipeline: PipelineSpec | None,
    hosts: WarmHosts,
) -> ExecutorHost:
    """The host of a source task in an executor: the plugin ``task_class`` (its
    ``module:qualname``), its clients and ``pipeline`` built there (``SourceHost``); its
    offset reader asks the driver's offset store."""
    task_id = setup.id
    conf = setup.producer_conf()
    store = clients.offsets()
    link = HostLink(
        hosts,
        task_id,
        SOURCE_HOST,
        (
            task_class,
            task_id,
            conf,
            clients.transactions,
            pipeline,
            topic_creation_spec(setup.worker_config, setup.connector_config, conf, task_id),
        ),
        offset_answerer(functools.partial(store.get, task_id.connector), store.refresh),
        plugin_sys_path(setup.worker_config.plugin_path),
    )
    return ExecutorHost(link, HostedPlugin(link))


def sink_host(
    setup: TaskSetup,
    task_class: str,
    clients: TaskClients,
    pipeline: PipelineSpec | None,
    hosts: WarmHosts,
) -> ExecutorHost:
    """The host of a sink task in an executor: the plugin ``task_class`` (its
    ``module:qualname``), its reader and ``pipeline`` built there (``SinkHost``)."""
    task_id = setup.id
    conf = reader_conf(setup.worker_config, setup.connector_config, task_id.connector)
    link = HostLink(
        hosts,
        task_id,
        SINK_HOST,
        (task_class, task_id, conf, setup.producer_conf(), pipeline),
        _no_questions,
        plugin_sys_path(setup.worker_config.plugin_path),
    )
    return ExecutorHost(link, HostedSinkPlugin(link))


def _no_questions(name: str, args: tuple[Any, ...]) -> Any:
    raise ValueError(f"a sink task's host asks nothing, got {name!r}")

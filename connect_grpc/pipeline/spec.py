"""What a task is handed to build its record pipeline where it runs (``PipelineSpec``:
picklable, so that a task hosted in a Spark task builds its own there).

The worker makes one spec a task (``pipeline_spec``, with ``build.ConnectorPipeline`` as
its factory); the task starts the pipeline from it where its plugin runs
(``task_pipeline.start_pipeline``). Nothing is parsed or created before then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from connect_grpc.kernel.domain import TaskId
from connect_grpc.pipeline.build import PipelinePlugins
from connect_grpc.pipeline.dead_letter import dlq_admin_conf

__all__ = ["PipelineFactory", "PipelineSpec", "pipeline_spec"]

#: Builds a task's pipeline plugins where the task runs (picklable, for a hosted task).
PipelineFactory = Callable[[], PipelinePlugins]


@dataclass(frozen=True)
class PipelineSpec:
    """What a task needs to build its pipeline where it runs (picklable when its factory
    is: a hosted task builds its own in its Spark task)."""

    factory: PipelineFactory
    #: The dead-letter queue's admin client (``dead_letter.dlq_admin_conf``).
    admin_conf: dict[str, str]


def pipeline_spec(
    factory: PipelineFactory | None,
    task: TaskId,
    producer_conf: Mapping[str, str],
    connector_config: Mapping[str, str],
) -> PipelineSpec | None:
    """The spec of a task's pipeline: ``factory`` and the dead-letter queue's admin client,
    from the task's producer settings and the connector's ``admin.override.*``. None without
    a factory (records then move as bytes)."""
    if factory is None:
        return None
    return PipelineSpec(factory, dlq_admin_conf(producer_conf, connector_config, task))

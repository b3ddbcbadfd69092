"""PreviewPipeline's control-plane part: which config (an existing connector's, or the
request's), validated as a create validates it and resolved; the records and the preview
itself are the pipeline's (``pipeline.preview_input``, ``pipeline.preview``), or for a Java
connector Kafka's Java pipeline in the JVM (``JavaPlugins.preview``), whose tasks run it.
Nothing is written and no connector or task is created."""

from __future__ import annotations

from collections.abc import Callable

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import SinkConnector
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.java_plugins import JavaAwareValidator
from connect_grpc.herder.validation import ConfigValidator
from connect_grpc.kernel.domain import ConnectorType
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.pipeline.config import PipelineConfigError
from connect_grpc.pipeline.preview import preview_pipeline
from connect_grpc.pipeline.preview_input import TopicTailReader, preview_records
from connect_grpc.pipeline.preview_model import PipelinePreview, PreviewRequest


def run_preview(
    request: PreviewRequest,
    connector_config: Callable[[str], dict[str, str]],
    validator: ConfigValidator,
    worker_config: WorkerConfig,
    plugins: Plugins,
    *,
    read_tail: TopicTailReader,
) -> PipelinePreview:
    """The preview the request asks for. ``connector_config`` reads an existing
    connector's config (NOT_FOUND for an unknown one); ``read_tail`` the last records of a
    topic.

    Raises:
        InvalidArgumentError: the request is malformed, or the config is invalid (with the
            field violations of a create).
        NotFoundError: no connector of that name.
        UnavailableError: Kafka did not answer in time (``from_topic``).
        FailedPreconditionError: the config is a Java connector's, on a worker that runs
            no Java connectors (as a create is refused there).
        UnavailableError: the JVM's preview did not answer in time.
    """
    config = _config_of(request, connector_config)
    validator.ensure_valid(config)
    if isinstance(validator, JavaAwareValidator):
        java = validator.java_plugins
        # ensure_valid refused a Java connector where none runs, and waited for the scan
        java_class = java.java_class_of(config, wait=True)
        if java_class is not None:
            is_sink = java.connector_kind(java_class) is ConnectorType.SINK
            resolved = validator.resolved(config)
            records = preview_records(request, resolved, is_sink, read_tail)
            return java.preview(
                resolved, java_class, records, request.samples, _config_field(request)
            )
    is_sink = isinstance(validator.plugin_for(config), SinkConnector)
    resolved = validator.resolved(config)
    records = preview_records(request, resolved, is_sink, read_tail)
    try:
        return preview_pipeline(
            resolved, worker_config, plugins, is_sink=is_sink, records=records
        )
    except PipelineConfigError as exc:
        raise InvalidArgumentError.for_field(_config_field(request), str(exc)) from None


def _config_field(request: PreviewRequest) -> str:
    return "name" if request.name else "config"


def _config_of(
    request: PreviewRequest, connector_config: Callable[[str], dict[str, str]]
) -> dict[str, str]:
    if request.name and request.config:
        raise InvalidArgumentError.for_field(
            "config", "give either name (an existing connector) or config, not both"
        )
    if request.name:
        return connector_config(request.name)
    if not request.config:
        raise InvalidArgumentError.for_field(
            "config", "required: a connector config, or the name of an existing connector"
        )
    return dict(request.config)

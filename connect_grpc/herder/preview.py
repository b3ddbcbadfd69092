"""PreviewPipeline's control-plane part: which config, validated as a create validates
it, and which records; the records then go through ``runtime.preview``. Nothing is written
and no connector or task is created."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from connect_grpc.configdef import java_trim
from connect_grpc.connectors.api import SinkConnector, SinkRecord, SourceRecord
from connect_grpc.connectors.pipeline_config import PipelineConfigError
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.errors import InvalidArgumentError
from connect_grpc.herder.validation import ConfigValidator
from connect_grpc.preview import MAX_PREVIEW_RECORDS, PipelinePreview, PreviewRequest
from connect_grpc.runtime.preview import preview_pipeline, sink_samples, source_samples
from connect_grpc.worker_config import WorkerConfig

#: Reads the last records of a topic for a sink connector's preview within the caller's
#: deadline: (connector config, topic, how many) -> the records, oldest first.
TopicTailReader = Callable[[Mapping[str, str], str, int], list[SinkRecord]]


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
    """
    config = _config_of(request, connector_config)
    validator.ensure_valid(config)
    is_sink = isinstance(validator.plugin_for(config), SinkConnector)
    resolved = validator.resolved(config)
    records = _records(request, resolved, is_sink, read_tail)
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


def _records(
    request: PreviewRequest,
    config: Mapping[str, str],
    is_sink: bool,
    read_tail: TopicTailReader,
) -> Sequence[SinkRecord] | Sequence[SourceRecord]:
    if request.samples is not None and request.from_topic is not None:
        raise InvalidArgumentError.for_field(
            "samples", "give either samples or from_topic, not both"
        )
    tail = request.from_topic
    if tail is not None:
        if not is_sink:
            raise InvalidArgumentError.for_field(
                "from_topic",
                "a source connector's records come from its own system: give samples",
            )
        if not tail.topic.strip():
            raise InvalidArgumentError.for_field("from_topic.topic", "required: a topic name")
        if not 1 <= tail.last <= MAX_PREVIEW_RECORDS:
            raise InvalidArgumentError.for_field(
                "from_topic.last", f"must be between 1 and {MAX_PREVIEW_RECORDS}, not {tail.last}"
            )
        return read_tail(config, tail.topic.strip(), tail.last)
    samples = request.samples
    if not samples:
        raise InvalidArgumentError.for_field(
            "samples.records", "required: at least one sample record, or from_topic"
        )
    if len(samples) > MAX_PREVIEW_RECORDS:
        raise InvalidArgumentError.for_field(
            "samples.records",
            f"at most {MAX_PREVIEW_RECORDS} records, not {len(samples)}",
        )
    if is_sink:
        return sink_samples(samples, _first(config.get("topics", "")))
    return source_samples(samples, java_trim(config.get("topic", "")) or None)


def _first(topics: str) -> str | None:
    """The first entry of a ``topics`` list (None when it is empty)."""
    names = [java_trim(name) for name in topics.split(",") if java_trim(name)]
    return names[0] if names else None

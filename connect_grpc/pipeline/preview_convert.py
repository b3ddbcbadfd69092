"""PreviewPipeline's messages to and from ``pipeline.preview_model``'s values, both ways: the
server reads requests and writes responses, the client the other way round."""

from __future__ import annotations

from collections.abc import Iterable

from connect_grpc.kernel.domain import ConnectorType
from connect_grpc.pipeline.preview_model import (
    ConnectData,
    Data,
    FailureAction,
    Outcome,
    PipelinePreview,
    PreviewRequest,
    RecordPreview,
    RecordView,
    SampleData,
    SampleRecord,
    StageFailure,
    StageView,
    TopicTail,
    Verdict,
)
from connect_grpc.v1 import connect_pb2 as pb

_TYPES = {
    ConnectorType.SOURCE: pb.CONNECTOR_TYPE_SOURCE,
    ConnectorType.SINK: pb.CONNECTOR_TYPE_SINK,
    ConnectorType.UNKNOWN: pb.CONNECTOR_TYPE_UNSPECIFIED,
}
_OUTCOMES = {
    Outcome.DELIVERED: pb.PREVIEW_OUTCOME_DELIVERED,
    Outcome.DROPPED: pb.PREVIEW_OUTCOME_DROPPED,
    Outcome.FAILED: pb.PREVIEW_OUTCOME_FAILED,
}
_VERDICTS = {
    Verdict.APPLIED: pb.PREVIEW_STAGE_VERDICT_APPLIED,
    Verdict.SKIPPED_BY_PREDICATE: pb.PREVIEW_STAGE_VERDICT_SKIPPED_BY_PREDICATE,
    Verdict.DROPPED: pb.PREVIEW_STAGE_VERDICT_DROPPED,
    Verdict.FAILED: pb.PREVIEW_STAGE_VERDICT_FAILED,
}
_ACTIONS = {
    FailureAction.RECORD_SKIPPED: pb.PREVIEW_FAILURE_ACTION_RECORD_SKIPPED,
    FailureAction.TASK_FAILS: pb.PREVIEW_FAILURE_ACTION_TASK_FAILS,
}

_TYPE_OF = {number: value for value, number in _TYPES.items()}
_OUTCOME_OF = {number: value for value, number in _OUTCOMES.items()}
_VERDICT_OF = {number: value for value, number in _VERDICTS.items()}
_ACTION_OF = {number: value for value, number in _ACTIONS.items()}


# ---- request ----------------------------------------------------------------------------------


def request_to_pb(request: PreviewRequest) -> pb.PreviewPipelineRequest:
    message = pb.PreviewPipelineRequest(name=request.name, config=request.config or {})
    if request.from_topic is not None:
        message.from_topic.topic = request.from_topic.topic
        message.from_topic.last = request.from_topic.last
    elif request.samples is not None:
        message.samples.SetInParent()
        for sample in request.samples:
            _sample_to_pb(sample, message.samples.records.add())
    return message


def _place_to_pb(
    record: SampleRecord | RecordView, message: pb.PreviewSampleRecord | pb.PreviewRecord
) -> None:
    """A record's topic, partition, offset and timestamp (the optional ones only if set)."""
    message.topic = record.topic
    if record.partition is not None:
        message.partition = record.partition
    if record.offset is not None:
        message.offset = record.offset
    if record.timestamp_ms is not None:
        message.timestamp_ms = record.timestamp_ms


def _sample_to_pb(sample: SampleRecord, message: pb.PreviewSampleRecord) -> None:
    _place_to_pb(sample, message)
    _sample_data_to_pb(sample.key, message.key)
    _sample_data_to_pb(sample.value, message.value)
    for key, value in sample.headers:
        header = message.headers.add(key=key)
        _sample_data_to_pb(value, header.value)


def _sample_data_to_pb(data: SampleData, message: pb.PreviewSampleData) -> None:
    if isinstance(data, str):
        message.json = data
    elif data is not None:
        message.raw = data


def request_from_pb(message: pb.PreviewPipelineRequest) -> PreviewRequest:
    input_kind = message.WhichOneof("input")
    samples = None
    from_topic = None
    if input_kind == "samples":
        samples = tuple(_sample_from_pb(record) for record in message.samples.records)
    elif input_kind == "from_topic":
        from_topic = TopicTail(message.from_topic.topic, message.from_topic.last)
    return PreviewRequest(
        name=message.name.strip(),
        config=dict(message.config) or None,
        samples=samples,
        from_topic=from_topic,
    )


def _sample_from_pb(message: pb.PreviewSampleRecord) -> SampleRecord:
    return SampleRecord(
        topic=message.topic,
        partition=message.partition if message.HasField("partition") else None,
        offset=message.offset if message.HasField("offset") else None,
        timestamp_ms=message.timestamp_ms if message.HasField("timestamp_ms") else None,
        key=_sample_data_from_pb(message.key),
        value=_sample_data_from_pb(message.value),
        headers=tuple(
            (header.key, _sample_data_from_pb(header.value)) for header in message.headers
        ),
    )


def _sample_data_from_pb(message: pb.PreviewSampleData) -> SampleData:
    kind = message.WhichOneof("data")
    if kind == "json":
        return message.json
    if kind == "raw":
        return message.raw
    return None


# ---- response ---------------------------------------------------------------------------------


def preview_to_pb(preview: PipelinePreview) -> pb.PreviewPipelineResponse:
    response = pb.PreviewPipelineResponse(type=_TYPES[preview.type])
    for record in preview.records:
        _record_preview_to_pb(record, response.records.add())
    return response


def _record_preview_to_pb(record: RecordPreview, message: pb.RecordPreview) -> None:
    _view_to_pb(record.input, message.input)
    for stage in record.stages:
        _stage_to_pb(stage, message.stages.add())
    message.outcome = _OUTCOMES[record.outcome]
    output = record.output
    if output is not None:
        last = record.stages[-1] if record.stages else None
        if last is not None and last.record is output:  # the same view: copied, not built
            message.output.CopyFrom(message.stages[-1].record)
        else:
            _view_to_pb(output, message.output)
    failure = record.failure
    if failure is not None:
        target = message.failure
        target.stage = failure.stage
        target.class_name = failure.class_name
        target.exception_class = failure.exception_class
        target.message = failure.message
        target.action = _ACTIONS[failure.action]
        target.dead_letter_topic = failure.dead_letter_topic
        for key, value in failure.dead_letter_headers:
            _data_to_pb(value, target.dead_letter_headers.add(key=key).value)


def _stage_to_pb(stage: StageView, message: pb.StagePreview) -> None:
    message.stage = stage.stage
    message.class_name = stage.class_name
    message.alias = stage.alias
    message.predicate = stage.predicate
    message.predicate_matched = stage.predicate_matched
    message.verdict = _VERDICTS[stage.verdict]
    if stage.record is not None:
        _view_to_pb(stage.record, message.record)


def _view_to_pb(view: RecordView, message: pb.PreviewRecord) -> None:
    _place_to_pb(view, message)
    _data_to_pb(view.key, message.key)
    _data_to_pb(view.value, message.value)
    for key, value in view.headers:
        _data_to_pb(value, message.headers.add(key=key).value)


def _data_to_pb(data: Data, message: pb.PreviewData) -> None:
    if isinstance(data, bytes):
        message.raw = data
    elif isinstance(data, ConnectData):
        message.connect.json = data.json
        message.connect.schema = data.schema
    else:
        message.SetInParent()  # null: present, with neither raw nor connect


def preview_from_pb(message: pb.PreviewPipelineResponse) -> PipelinePreview:
    return PipelinePreview(
        _TYPE_OF.get(message.type, ConnectorType.UNKNOWN),
        tuple(_record_preview_from_pb(record) for record in message.records),
    )


def _record_preview_from_pb(message: pb.RecordPreview) -> RecordPreview:
    failure = None
    if message.HasField("failure"):
        found = message.failure
        failure = StageFailure(
            found.stage,
            found.class_name,
            found.exception_class,
            found.message,
            _ACTION_OF[found.action],
            found.dead_letter_topic,
            tuple(
                (header.key, header.value.raw if header.value.HasField("raw") else None)
                for header in found.dead_letter_headers
            ),
        )
    return RecordPreview(
        _view_from_pb(message.input),
        tuple(_stage_from_pb(stage) for stage in message.stages),
        _OUTCOME_OF[message.outcome],
        _view_from_pb(message.output) if message.HasField("output") else None,
        failure,
    )


def _stage_from_pb(message: pb.StagePreview) -> StageView:
    return StageView(
        message.stage,
        message.class_name,
        _VERDICT_OF[message.verdict],
        _view_from_pb(message.record) if message.HasField("record") else None,
        message.alias,
        message.predicate,
        message.predicate_matched,
    )


def _view_from_pb(message: pb.PreviewRecord) -> RecordView:
    return RecordView(
        message.topic,
        message.partition if message.HasField("partition") else None,
        message.offset if message.HasField("offset") else None,
        message.timestamp_ms if message.HasField("timestamp_ms") else None,
        _data_from_pb(message.key),
        _data_from_pb(message.value),
        _headers_from_pb(message.headers),
    )


def _headers_from_pb(headers: Iterable[pb.PreviewHeader]) -> tuple[tuple[str, Data], ...]:
    return tuple((header.key, _data_from_pb(header.value)) for header in headers)


def _data_from_pb(message: pb.PreviewData) -> Data:
    kind = message.WhichOneof("data")
    if kind == "raw":
        return message.raw
    if kind == "connect":
        return ConnectData(message.connect.json, message.connect.schema)
    return None

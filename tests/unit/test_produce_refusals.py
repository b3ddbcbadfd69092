"""KIP-779 on a source task: records the broker refuses for good under
``errors.tolerance=all`` (reference §1.1 step 7, §1.5). Which produce failures are a
record's own refusal, how a batch refused whole is written again one record per request,
and how a refused record is skipped: reported at KAFKA_PRODUCE, counted, the plugin's
``commit_record(record, None)`` called. A fake librdkafka producer stands for the broker:
like librdkafka, it fails a whole batch that is larger than the topic's limit."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException

from connect_grpc.connectors.api import SourceRecord, SourceTask
from connect_grpc.kernel.domain import TaskId
from connect_grpc.pipeline.build import PipelinePlugins
from connect_grpc.pipeline.config import ErrorHandling
from connect_grpc.pipeline.dead_letter_headers import ERROR_HEADER_ORIG_TOPIC, ERROR_HEADER_STAGE
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.pipeline.task_pipeline import TaskPipeline, start_pipeline
from connect_grpc.pipeline.tolerance import LogReporter, ProcessingContext
from connect_grpc.runtime import client_cache, produce
from connect_grpc.runtime.kafka_results import KafkaFailure, ProduceResult, RecordRefusedError
from connect_grpc.runtime.produce import DriverProducer, ProduceErrors, produce_slices
from connect_grpc.runtime.source_batch import (
    Batch,
    DeliveryError,
    check_delivery,
    commit_dropped,
    skip_refused,
)
from connect_grpc.runtime.spark_rows import group_for_slices, slice_indexes, to_produce_row
from connect_grpc.testing.pipeline_plugins import DropTransformation

pytestmark = pytest.mark.timeout(10)

TASK = TaskId("src", 0)
#: The topic's ``max.message.bytes`` in the fake broker; larger records are refused.
LIMIT = 100
#: The client's own ``message.max.bytes``: larger records are refused by ``produce``.
CLIENT_LIMIT = 1000
ALL = ErrorHandling(
    retry_timeout_ms=0,
    retry_delay_max_ms=60000,
    tolerate_all=True,
    log_enable=True,
    log_include_messages=False,
    dlq_topic="",
    dlq_replication_factor=3,
    dlq_context_headers=False,
)
NONE = replace(ALL, tolerate_all=False)


class _Message:
    def __init__(self, topic: str, partition: int) -> None:
        self._topic, self._partition = topic, partition

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition


class FakeLibrdkafka:
    """confluent_kafka.Producer as librdkafka behaves against a topic with a size limit:
    records queued together are one batch, refused whole when larger than the limit (one
    record per request with ``batch.num.messages=1``); only failures are reported."""

    #: What every producer made in a test wrote, in order.
    written: list[bytes] = []
    #: An error every delivery fails with (None: the size rule only).
    fail_all_with: KafkaError | None = None

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.one_by_one = conf.get("batch.num.messages") == "1"
        self.queued: list[tuple[bytes, Any]] = []

    def produce(
        self, topic: str, value: bytes, key: Any, partition: int, on_delivery: Any, **kw: Any
    ) -> None:
        if len(value) > CLIENT_LIMIT:
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large"))
        self.queued.append((value, on_delivery))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float = 0) -> int:
        queued, self.queued = self.queued, []
        batch_too_large = sum(len(value) for value, _ in queued) > LIMIT
        for value, on_delivery in queued:
            error = FakeLibrdkafka.fail_all_with
            too_large = len(value) > LIMIT if self.one_by_one else batch_too_large
            if error is None and too_large:
                error = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
            if error is None:
                FakeLibrdkafka.written.append(value)
            else:
                on_delivery(error, _Message("out", 0))
        return 0

    def purge(self) -> None:
        self.queued = []


@pytest.fixture(autouse=True)
def fake_librdkafka(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confluent_kafka, "Producer", FakeLibrdkafka)
    monkeypatch.setattr(produce, "CLIENTS", client_cache.ClientCache())
    FakeLibrdkafka.written = []
    FakeLibrdkafka.fail_all_with = None


def record(value: bytes, offset: int, partition: str = "a") -> SourceRecord:
    return SourceRecord({"p": partition}, {"o": offset}, "out", value)


def never() -> bool:
    return False


BIG = b"x" * 500
BATCH = [record(b"one", 0), record(BIG, 1), record(b"three", 2)]


# ---- which failures are a record's own refusal ---------------------------------------------


def test_a_batch_refused_whole_is_written_again_one_record_per_request() -> None:
    result = DriverProducer({"client.id": "t"}).produce(BATCH, never, tolerate=True)
    assert [index for index, _ in result.refused] == [1]
    assert result.refused[0][1].name == "MSG_SIZE_TOO_LARGE"
    assert result.only_refusals and result.produced == 3
    assert FakeLibrdkafka.written == [b"one", b"three"]  # in order, the big one left out


def test_without_tolerance_a_refused_batch_is_a_failure_that_is_not_retriable() -> None:
    result = DriverProducer({"client.id": "t"}).produce(BATCH, never)
    assert (result.failed, result.retriable, result.refused) == (3, False, ())
    assert FakeLibrdkafka.written == []
    with pytest.raises(DeliveryError, match="MSG_SIZE_TOO_LARGE") as raised:
        check_delivery([result], 3)
    assert not raised.value.retriable


def test_retriable_failures_keep_the_batch_for_a_retry_even_with_tolerance() -> None:
    FakeLibrdkafka.fail_all_with = KafkaError(KafkaError._MSG_TIMED_OUT, "timed out")
    result = DriverProducer({"client.id": "t"}).produce(BATCH[:1], never, tolerate=True)
    assert (result.failed, result.retriable, result.refused) == (1, True, ())
    with pytest.raises(DeliveryError) as raised:
        check_delivery([result], 1)
    assert raised.value.retriable


def test_a_record_the_client_refuses_for_its_size_is_refused_as_the_broker_would() -> None:
    huge = record(b"y" * (CLIENT_LIMIT + 1), 3)
    result = DriverProducer({"client.id": "t"}).produce([*BATCH, huge], never, tolerate=True)
    assert sorted(index for index, _ in result.refused) == [1, 3]
    assert FakeLibrdkafka.written == [b"one", b"three"]


def test_a_fatal_producer_error_is_never_tolerated() -> None:
    errors = ProduceErrors()
    errors.on_fatal(KafkaError(KafkaError._FENCED, "fenced", fatal=True))
    result = errors.result(3)
    assert not produce._worth_redoing(result, errors, stopping=False)
    assert not result.only_refusals


def test_each_record_of_a_one_by_one_write_names_itself() -> None:
    errors = ProduceErrors()
    producer = FakeLibrdkafka({"batch.num.messages": "1"})
    rows = [to_produce_row(r) for r in BATCH]
    assert produce._hand_one_by_one(rows, producer, errors, never) == 3
    producer.flush()
    assert [index for index, _ in errors.refused] == [1]
    errors.on_delivery_of(2, KafkaError(KafkaError._MSG_TIMED_OUT, "t"), _Message("out", 0))
    assert [index for index, _ in errors.refused] == [1]  # a retriable failure is not one
    assert not errors.result(3).only_refusals


def test_an_executor_slice_names_its_refused_rows_by_index() -> None:
    slices = group_for_slices(BATCH, 1)
    [result] = produce_slices({"client.id": "t"}, iter(slices), tolerate=True)
    assert [index for index, _ in result.refused] == [1]
    [strict] = produce_slices({"client.id": "t"}, iter(slices))
    assert (strict.failed, strict.refused) == (3, ())


def test_slice_indexes_name_the_records_of_each_slice() -> None:
    records = [record(b"%d" % i, i, partition=f"p{i % 5}") for i in range(40)]
    slices = group_for_slices(records, 3)
    members = slice_indexes(records, 3)
    assert [[to_produce_row(records[i]) for i in group] for group in members] == slices


def test_check_delivery_returns_refusals_only_when_every_failure_is_one() -> None:
    why = KafkaFailure(10, "MSG_SIZE_TOO_LARGE", False, "out[0]: too large")
    refused = ProduceResult(2, 1, ["x"], False, ((1, why),))
    assert check_delivery([ProduceResult(3, 0, []), refused], 5) == [(1, 1, why)]
    with pytest.raises(DeliveryError):
        check_delivery([ProduceResult(2, 2, ["x"], False, ((1, why),))], 2)
    with pytest.raises(DeliveryError):
        check_delivery([refused], 3)  # a record not handed to the producer


# ---- skipping a refused record -------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.contexts: list[ProcessingContext] = []

    def report(self, context: ProcessingContext) -> None:
        self.contexts.append(replace(context))

    def close(self) -> None:
        return


class ListeningTask(SourceTask):
    def __init__(self) -> None:
        self.committed: list[tuple[SourceRecord, Any]] = []

    def start(self, config: Mapping[str, str]) -> None:
        return

    def stop(self, connector_deleted: bool = False) -> None:
        return

    def poll(self, max_records: int) -> list[SourceRecord]:
        return []

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        self.committed.append((record, metadata))
        if record.source_offset["o"] == 0:
            raise RuntimeError("a listener that fails is logged, not fatal")


class NotListening(ListeningTask):
    commit_record = SourceTask.commit_record  # type: ignore[assignment]


def source_pipeline(*stages: Any, errors: ErrorHandling = ALL) -> tuple[TaskPipeline, Recorder]:
    built = TaskPipeline.create(
        TASK,
        PipelinePlugins(None, None, None, list(stages), errors),
        is_sink=False,
        producer_conf={},
        sleep=lambda ms: False,
    )
    recorder = Recorder()
    built.operator.reporters = [*built.operator.reporters, recorder]
    return built, recorder


def test_a_refused_record_is_reported_counted_and_committed_as_dropped() -> None:
    from connect_grpc.pipeline.build import TransformStage

    built, recorder = source_pipeline(TransformStage("drop", DropTransformation(), None, False))
    polled = [record(b"drop me", 0), record(b"ok", 1), record(BIG, 2)]
    batch = Batch(polled).through(built)
    assert [r.value for r in batch.outgoing] == [b"ok", BIG]
    why = KafkaFailure(10, "MSG_SIZE_TOO_LARGE", False, "out[0]: Broker: Message size too large")
    task = ListeningTask()
    skip_refused(batch, [(1, why)], built, task, structlog_logger())
    [context] = recorder.contexts
    assert context.original is polled[2]  # the record as polled, before the pipeline
    assert context.stage is not None and context.stage.name == "KAFKA_PRODUCE"
    assert context.executing_class == "org.apache.kafka.connect.runtime.WorkerSourceTask"
    assert isinstance(context.error, RecordRefusedError)
    assert str(context.error) == "MSG_SIZE_TOO_LARGE: out[0]: Broker: Message size too large"
    assert context.target_topic == "out"
    assert task.committed == [(polled[2], None)]
    counts = built.take_counts()
    assert (counts.failures, counts.errors, counts.skipped, counts.logged) == (1, 1, 1, 1)
    assert counts.last_error_ms > 0


def test_the_log_line_names_the_produce_stage_and_kafkas_class() -> None:
    built, recorder = source_pipeline()
    [log_reporter] = [r for r in built.operator.reporters if isinstance(r, LogReporter)]
    why = KafkaFailure(10, "MSG_SIZE_TOO_LARGE", False, "too large")
    skip_refused(Batch([record(BIG, 0)]).through(built), [(0, why)], built, NotListening(),
                 structlog_logger())
    assert log_reporter.message(recorder.contexts[0]) == (
        "Error encountered in task src-0. Executing stage 'KAFKA_PRODUCE' with class "
        "'org.apache.kafka.connect.runtime.WorkerSourceTask'."
    )


def test_a_refused_record_goes_to_the_source_dead_letter_queue() -> None:
    produced: list[dict[str, Any]] = []

    class DlqProducer:
        def __init__(self, conf: Mapping[str, Any]) -> None:
            return

        def produce(self, topic: str, value: Any, key: Any, *, on_delivery: Any, **kw: Any) -> None:
            produced.append({"topic": topic, "value": value, **kw})
            on_delivery(None, None)

        def poll(self, timeout: float) -> int:
            return 0

        def flush(self, timeout: float) -> int:
            return 0

    errors = replace(ALL, dlq_topic="dlq", dlq_context_headers=True)
    built = TaskPipeline.create(
        TASK,
        PipelinePlugins(None, None, None, [], errors),
        is_sink=False,
        producer_conf={},
        sleep=lambda ms: False,
        producer_factory=DlqProducer,
    )
    why = KafkaFailure(10, "MSG_SIZE_TOO_LARGE", False, "too large")
    polled = record(BIG, 0)
    skip_refused(Batch([polled]).through(built), [(0, why)], built, NotListening(),
                 structlog_logger())
    [dead] = produced
    headers = dict(dead["headers"])
    assert (dead["topic"], dead["value"]) == ("dlq", BIG)
    assert headers[ERROR_HEADER_STAGE] == b"KAFKA_PRODUCE"
    assert headers[ERROR_HEADER_ORIG_TOPIC] == b"out"
    assert built.take_counts().dlq_requests == 1


def test_dropped_records_are_committed_only_to_a_plugin_that_listens() -> None:
    records = [record(b"a", 0), record(b"b", 1)]
    listening = ListeningTask()
    commit_dropped(listening, records, structlog_logger())
    assert listening.committed == [(records[0], None), (records[1], None)]
    silent = NotListening()
    commit_dropped(silent, records, structlog_logger())
    assert silent.committed == []


def test_a_pass_through_source_keeps_its_pipeline_only_to_tolerate_refusals() -> None:
    def spec(errors: ErrorHandling) -> PipelineSpec:
        return PipelineSpec(lambda: PipelinePlugins(None, None, None, [], errors), {})

    start = functools.partial(
        start_pipeline, task=TASK, is_sink=False, producer_conf={}, sleep=lambda ms: False
    )
    kept = start(spec(ALL))
    assert kept is not None and kept.pass_through and kept.tolerates_all
    batch = Batch([record(b"a", 0)]).through(kept)
    assert batch.outgoing is batch.records and batch.converted is None  # not run through it
    assert start(spec(NONE)) is None


def structlog_logger() -> Any:
    import structlog

    return structlog.get_logger("test")

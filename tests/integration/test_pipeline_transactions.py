"""An exactly-once source batch through a record pipeline against the real broker: the
converted records and the offsets of every polled record (dropped ones included, as Kafka
Connect's exactly-once task commits them) in one transaction; the source dead-letter queue
written outside it and awaited before it commits."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from connect_grpc.connectors.api import SourceRecord
from connect_grpc.kernel.domain import TaskId
from connect_grpc.pipeline.build import PipelinePlugins, TransformStage
from connect_grpc.pipeline.config import ErrorHandling
from connect_grpc.pipeline.dead_letter_headers import ERROR_HEADER_ORIG_TOPIC
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.runtime.transactions import (
    TransactionalProducer,
    Transactions,
    task_transactional_id,
)
from connect_grpc.storage.kafka_offsets import KafkaOffsetStore
from connect_grpc.testing.cluster import wait_until
from connect_grpc.testing.pipeline_plugins import (
    DropTransformation,
    PoisonTransformation,
    Utf8Converter,
)
from tests.integration.helpers import create_topic, read_all, read_committed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TIMEOUT_S = 30.0
PARTITION = {"file": "/data/in.txt"}
TASK = TaskId("c", 0)


@pytest.fixture
def store(kafka_bootstrap: str) -> Iterator[KafkaOffsetStore]:
    offsets = KafkaOffsetStore(
        {"bootstrap.servers": kafka_bootstrap},
        f"pipeline-eos-offsets-{uuid.uuid4().hex[:8]}",
        5,
        timeout=TIMEOUT_S,
    )
    offsets.start()
    yield offsets
    offsets.stop()


def test_an_exactly_once_batch_commits_converted_records_and_every_polled_offset(
    kafka_bootstrap: str, kafka_admin: AdminClient, store: KafkaOffsetStore
) -> None:
    data = create_topic(kafka_admin, f"pipeline-eos-{uuid.uuid4().hex[:8]}")
    dlq = f"pipeline-eos-dlq-{uuid.uuid4().hex[:8]}"
    errors = ErrorHandling(
        retry_timeout_ms=0,
        retry_delay_max_ms=60000,
        tolerate_all=True,
        log_enable=False,
        log_include_messages=False,
        dlq_topic=dlq,
        dlq_replication_factor=1,
        dlq_context_headers=True,
    )
    plugins = PipelinePlugins(
        None,
        Utf8Converter(),
        None,
        [
            TransformStage("drop", DropTransformation(), None, False),
            TransformStage("poison", PoisonTransformation(), None, False),
        ],
        errors,
    )
    conf = {"bootstrap.servers": kafka_bootstrap, "client.id": "pipeline-eos"}
    pipeline = TaskPipeline.create(
        TASK, plugins, is_sink=False, producer_conf=conf, sleep=lambda ms: False
    )
    pipeline.open({"bootstrap.servers": kafka_bootstrap})
    producer = TransactionalProducer(
        conf, Transactions(task_transactional_id("g", "c", 0), store.topic, "c")
    )
    try:
        values = ["v0", "drop-1", "poison-2", "v3", "drop-4"]
        polled = [
            SourceRecord(PARTITION, {"position": i + 1}, data, value)
            for i, value in enumerate(values)
        ]
        converted = pipeline.apply_source(polled)
        pipeline.await_dead_letters()
        assert producer.write(polled, lambda: False, converted)
    finally:
        producer.close()
        pipeline.close()

    wait_until(lambda: read_committed(kafka_bootstrap, data) == [b"v0", b"v3"], timeout=TIMEOUT_S)
    # the dropped last record's offset is committed with the transaction
    wait_until(lambda: store.get("c", PARTITION) == {"position": 5}, timeout=TIMEOUT_S)
    [dead] = read_all(kafka_bootstrap, dlq)
    assert dead.value() == b"poison-2"
    assert dict(dead.headers())[ERROR_HEADER_ORIG_TOPIC] == data.encode()
    assert len(kafka_admin.list_topics(topic=dlq, timeout=30).topics[dlq].partitions) == 1

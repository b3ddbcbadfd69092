"""PreviewPipeline of the last records of a real topic, over real gRPC against the shared
standalone worker, and ``connect-grpc ctl preview --from-topic`` against the same worker:
nothing is written, no connector is created."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from connect_grpc.client import ConnectClient
from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.kernel.errors import NotFoundError
from connect_grpc.pipeline.preview_model import ConnectData, Outcome, TopicTail
from connect_grpc.testing.cluster import WorkerProcess
from tests.integration.helpers import create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

EXECUTABLE = str(Path(sys.executable).parent / "connect-grpc")
#: When the records produced were made: ten minutes ago. Not a fixed date: a record older
#: than the topic's retention (7 days) goes at the broker's next retention check (every 30
#: s), which made this test read an empty topic now and then.
BASE_MS = int(time.time() * 1000) - 600_000
#: (partition, timestamp ms, value) of the records produced; the last three by timestamp
#: are spread over both partitions.
RECORDS = [
    (0, BASE_MS, {"id": 1}),
    (1, BASE_MS + 1_000, {"id": 2}),
    (0, BASE_MS + 2_000, {"id": 3}),
    (0, BASE_MS + 3_000, {"id": 4}),
    (1, BASE_MS + 4_000, {"id": 5}),
]


def sink_config(name: str, topic: str, tmp_path: Path) -> dict[str, str]:
    return {
        "name": name,
        "connector.class": "FileStreamSink",
        "topics": topic,
        "file": str(tmp_path / "never-written.txt"),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "transforms": "extract",
        "transforms.extract.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
        "transforms.extract.field": "id",
    }


def test_the_last_records_of_a_topic_are_previewed_by_the_client_and_by_ctl(
    worker: WorkerProcess, kafka_admin: Any, kafka_bootstrap: str, unique_topic: str,
    name: str, tmp_path: Path,
) -> None:
    create_topic(kafka_admin, unique_topic, partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for partition, timestamp, value in RECORDS:
        producer.produce(unique_topic, json.dumps(value).encode(), partition=partition,
                         timestamp=timestamp, headers=[("source", b"test")])
    assert producer.flush(30) == 0
    config = sink_config(name, unique_topic, tmp_path)

    with ConnectClient(worker.address, timeout=60) as client:
        preview = client.preview_pipeline(config=config, from_topic=TopicTail(unique_topic, 3))
        with pytest.raises(NotFoundError):
            client.preview_pipeline(config=config, from_topic=TopicTail(f"{unique_topic}-x", 3))
        assert name not in [connector.name for connector in client.list_connectors()]

    assert [record.outcome for record in preview.records] == [Outcome.DELIVERED] * 3
    assert [(r.input.partition, r.input.offset, r.input.timestamp_ms, r.input.headers)
            for r in preview.records] == [
        (0, 1, BASE_MS + 2_000, (("source", b"test"),)),
        (0, 2, BASE_MS + 3_000, (("source", b"test"),)),
        (1, 1, BASE_MS + 4_000, (("source", b"test"),)),
    ]
    assert [r.output.value if r.output else None for r in preview.records] == [
        ConnectData("3"), ConnectData("4"), ConnectData("5")
    ]
    assert not (tmp_path / "never-written.txt").exists()

    connector_file = tmp_path / "connector.json"
    connector_file.write_text(json.dumps({"name": name, "config": config}), encoding="utf-8")
    environment = {**os.environ, CONFIG_DIR_ENV: str(tmp_path / "ctl-config")}
    ran = subprocess.run(
        [EXECUTABLE, "ctl", "--target", worker.address, "preview", "-f", str(connector_file),
         "--from-topic", unique_topic, "--last", "2", "-o", "json"],
        env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=90, check=False,
    )
    assert ran.returncode == 0, ran.stderr
    document = json.loads(ran.stdout)
    assert [record["output"]["value"]["json"] for record in document["records"]] == ["4", "5"], (
        ran.stdout)
    table = subprocess.run(
        [EXECUTABLE, "ctl", "--target", worker.address, "preview", "-f", str(connector_file),
         "--from-topic", unique_topic, "--last", "1"],
        env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=90, check=False,
    )
    assert table.returncode == 0, table.stderr
    assert [line.split()[:4] for line in table.stdout.splitlines()[-2:]] == [
        ["0", "TRANSFORMATION", "extract", "(ExtractField$Value)"],
        ["0", "put", "DELIVERED", f"{unique_topic}/1"],
    ]

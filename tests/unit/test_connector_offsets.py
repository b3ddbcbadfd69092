"""A connector's own offsets topic in front of the worker's (``offsets.storage.topic``):
reads fall back, writes go to both, the fallback write never fails the change. The layered
view is exercised over two real file-backed stores, the opening of a connector's topic
(bounded by the caller's deadline) over stand-ins; the Kafka-backed behaviour is in
tests/integration/test_exactly_once.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import cast

import pytest

from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import UnavailableError
from connect_grpc.storage.base import OffsetEntry
from connect_grpc.storage.connector_offsets import (
    ConnectorOffsetStores,
    LayeredOffsets,
    own_offsets_topic,
)
from connect_grpc.storage.file_offsets import FileOffsetStore
from connect_grpc.storage.kafka_offsets import KafkaOffsetStore
from connect_grpc.testing.cluster import wait_until


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[FileOffsetStore, FileOffsetStore]]:
    own, worker = FileOffsetStore(tmp_path / "own"), FileOffsetStore(tmp_path / "worker")
    own.start()
    worker.start()
    yield own, worker
    own.stop()
    worker.stop()


A, B = {"file": "a"}, {"file": "b"}


def test_reads_come_from_the_connectors_topic_first_then_the_workers(
    stores: tuple[FileOffsetStore, FileOffsetStore],
) -> None:
    own, worker = stores
    worker.put("c", [(A, {"pos": 1}), (B, {"pos": 2})])
    own.put("c", [(A, {"pos": 10})])
    layered = LayeredOffsets(own, worker)
    assert layered.get("c", A) == {"pos": 10}
    assert layered.get("c", B) == {"pos": 2}
    assert layered.get("other", A) is None
    assert sorted(layered.get_all("c"), key=str) == sorted(
        [(A, {"pos": 10}), (B, {"pos": 2})], key=str
    )


def test_writes_go_to_both_topics(stores: tuple[FileOffsetStore, FileOffsetStore]) -> None:
    own, worker = stores
    LayeredOffsets(own, worker).put("c", [(A, {"pos": 5}), (B, None)])
    assert own.get("c", A) == worker.get("c", A) == {"pos": 5}


class BrokenStore(FileOffsetStore):
    def put(self, connector: str, entries: Sequence[OffsetEntry]) -> None:
        raise OSError("disk full")


def test_a_failed_write_to_the_workers_topic_does_not_fail_the_change(
    stores: tuple[FileOffsetStore, FileOffsetStore], tmp_path: Path
) -> None:
    own, _ = stores
    broken = BrokenStore(tmp_path / "broken")
    LayeredOffsets(own, broken).put("c", [(A, {"pos": 7})])
    assert own.get("c", A) == {"pos": 7}
    with pytest.raises(OSError):
        LayeredOffsets(broken, own).put("c", [(A, {"pos": 8})])  # the connector's may not


@pytest.mark.parametrize(
    ("config", "expected"),
    [({}, None), ({"offsets.storage.topic": " "}, None), ({"offsets.storage.topic": " t "}, "t")],
)
def test_own_offsets_topic(config: dict[str, str], expected: str | None) -> None:
    assert own_offsets_topic(config) == expected


class _Store:
    """Stands for a KafkaOffsetStore: a topic, and whether it was stopped."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


def _stores(open_store: Callable[[str], _Store]) -> ConnectorOffsetStores:
    return ConnectorOffsetStores(
        cast(KafkaOffsetStore, _Store("connect-offsets")),
        cast(Callable[[str], KafkaOffsetStore], open_store),
    )


def test_a_connector_without_its_own_topic_or_naming_the_workers_uses_the_workers() -> None:
    stores = _stores(lambda topic: pytest.fail("nothing to open"))
    worker = stores.primary({})
    assert worker.topic == "connect-offsets"
    assert stores.primary({"offsets.storage.topic": " connect-offsets "}) is worker
    assert stores.for_config({"offsets.storage.topic": ""}) is worker


def test_opening_a_topic_waits_no_longer_than_the_callers_deadline_and_goes_on() -> None:
    release = threading.Event()
    opened: list[str] = []

    def open_store(topic: str) -> _Store:
        release.wait(10)
        opened.append(topic)
        return _Store(topic)

    stores = _stores(open_store)
    config = {"offsets.storage.topic": "own-offsets"}
    began = time.monotonic()
    with deadline.scope(0.5), pytest.raises(UnavailableError, match="own-offsets") as caught:
        stores.primary(config)
    assert time.monotonic() - began < 2.0
    assert caught.value.retry_after_seconds > 0
    release.set()
    store = stores.primary(config)
    assert store.topic == "own-offsets"
    assert stores.primary(config) is store
    assert opened == ["own-offsets"]  # one opening, however many callers
    stores.stop()
    assert cast(_Store, store).stopped


def test_a_failed_opening_is_reported_and_tried_again_by_the_next_call() -> None:
    attempts: list[int] = []

    def open_store(topic: str) -> _Store:
        attempts.append(1)
        if len(attempts) == 1:
            raise UnavailableError("Kafka unreachable")
        return _Store(topic)

    stores = _stores(open_store)
    config = {"offsets.storage.topic": "own-offsets"}
    with pytest.raises(UnavailableError, match="Kafka unreachable"):
        stores.primary(config)
    assert stores.primary(config).topic == "own-offsets"
    assert len(attempts) == 2


def test_a_store_opened_after_stop_is_stopped_and_not_handed_out() -> None:
    release = threading.Event()
    built: list[_Store] = []

    def open_store(topic: str) -> _Store:
        release.wait(10)
        built.append(_Store(topic))
        return built[-1]

    stores = _stores(open_store)
    with deadline.scope(0.3), pytest.raises(UnavailableError):
        stores.primary({"offsets.storage.topic": "own-offsets"})
    stores.stop()
    release.set()
    wait_until(lambda: built and built[0].stopped)
    with pytest.raises(UnavailableError, match="stopping"):
        stores.primary({"offsets.storage.topic": "own-offsets"})

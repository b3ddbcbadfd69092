"""A connector's own offsets topic in front of the worker's (``offsets.storage.topic``):
reads fall back, writes go to both, the fallback write never fails the change. The layered
view is exercised over two real file-backed stores; the Kafka-backed behaviour is in
tests/integration/test_exactly_once.py."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from connect_grpc.storage.base import OffsetEntry
from connect_grpc.storage.connector_offsets import LayeredOffsets, own_offsets_topic
from connect_grpc.storage.file_offsets import FileOffsetStore


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

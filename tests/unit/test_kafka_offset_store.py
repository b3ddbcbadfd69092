"""KafkaOffsetStore's view without a broker: its own writes applied as given, their read-back
skipped, other writers' records decoded and applied newest first."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from connect_grpc.kernel.errors import ConnectError
from connect_grpc.storage import kafka_offsets
from connect_grpc.storage.kafka_offsets import KafkaOffsetStore, encode_records
from connect_grpc.storage.log_records import Freshness, LogRecord


class _Log:
    """The store's log: ``send_all`` writes each record at the next offset of partition 0;
    ``during_send`` runs before it returns (the tailing thread reading records back)."""

    def __init__(self) -> None:
        self.written: list[LogRecord] = []
        self.during_send: Callable[[list[LogRecord]], None] = lambda batch: None

    def send_all(self, records: Sequence[tuple[bytes, bytes | None]]) -> list[LogRecord]:
        batch = [
            LogRecord(key, value, 0, len(self.written) + index)
            for index, (key, value) in enumerate(records)
        ]
        self.written.extend(batch)
        self.during_send(batch)
        return batch


@pytest.fixture
def store() -> KafkaOffsetStore:
    store = KafkaOffsetStore({"bootstrap.servers": "127.0.0.1:1"}, "offsets")
    store._log = _Log()  # type: ignore[assignment]  # no broker: the writes land in memory
    return store


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[LogRecord]:
    """The records the store decodes from here on."""
    records: list[LogRecord] = []
    real_decode = kafka_offsets.decode_record

    def counting_decode(record: LogRecord) -> object:
        records.append(record)
        return real_decode(record)

    monkeypatch.setattr(kafka_offsets, "decode_record", counting_decode)
    return records


def _log_of(store: KafkaOffsetStore) -> _Log:
    log = store._log
    assert isinstance(log, _Log)
    return log


def test_a_write_is_visible_at_once_with_the_values_given(store: KafkaOffsetStore) -> None:
    store.put("c", [({"file": "a"}, {"position": 3}), ({"file": "b"}, {"position": 2**63 - 1})])
    assert store.get("c", {"file": "a"}) == {"position": 3}
    assert sorted(store.get_all("c"), key=lambda stored: str(stored[0])) == [
        ({"file": "a"}, {"position": 3}),
        ({"file": "b"}, {"position": 2**63 - 1}),
    ]


def test_a_written_reset_removes_the_partition(store: KafkaOffsetStore) -> None:
    store.put("c", [({"file": "a"}, {"position": 3}), ({"file": "b"}, {"position": 4})])
    store.put("c", [({"file": "a"}, None)])
    assert store.get("c", {"file": "a"}) is None
    assert store.get_all("c") == [({"file": "b"}, {"position": 4})]
    store.put("c", [({"file": "b"}, None)])
    assert store.get_all("c") == []


def test_the_written_offsets_are_copies(store: KafkaOffsetStore) -> None:
    partition, offset = {"file": "a"}, {"position": 3}
    store.put("c", [(partition, offset)])
    offset["position"] = 99
    partition["file"] = "z"
    assert store.get("c", {"file": "a"}) == {"position": 3}


def test_the_read_back_of_its_own_writes_is_not_decoded_again(
    store: KafkaOffsetStore, decoded: list[LogRecord]
) -> None:
    store.put("c", [({"file": "a"}, {"position": 3}), ({"file": "b"}, None)])
    for record in _log_of(store).written:  # the tailing thread reads them back
        store._apply(record)
    assert decoded == []
    assert store.get_all("c") == [({"file": "a"}, {"position": 3})]


def test_its_own_writes_read_back_before_the_write_returns_are_not_decoded(
    store: KafkaOffsetStore, decoded: list[LogRecord]
) -> None:
    store.put("c", [({"file": "a"}, {"position": 1})])
    _log_of(store).during_send = lambda batch: [store._apply(record) for record in batch]
    store.put("c", [({"file": "a"}, {"position": 3}), ({"file": "b"}, {"position": 4})])
    store.put("c", [({"file": "b"}, None)])
    assert decoded == []
    assert store.get_all("c") == [({"file": "a"}, {"position": 3})]


def test_another_value_under_a_key_being_written_is_decoded(
    store: KafkaOffsetStore, decoded: list[LogRecord]
) -> None:
    [(key, _)] = encode_records("c", [({"file": "a"}, {"position": 1})])
    theirs = LogRecord(key, b'{"position":7}', 0, 50)
    _log_of(store).during_send = lambda batch: store._apply(theirs)
    store.put("c", [({"file": "a"}, {"position": 1})])  # acknowledged at offset 0: older
    assert decoded == [theirs]
    assert store.get("c", {"file": "a"}) == {"position": 7}


def test_a_failed_write_leaves_nothing_to_match_later(
    store: KafkaOffsetStore, decoded: list[LogRecord]
) -> None:
    def fail(batch: list[LogRecord]) -> None:
        raise ConnectError("write to offsets failed")

    _log_of(store).during_send = fail
    with pytest.raises(ConnectError):
        store.put("c", [({"file": "a"}, {"position": 1})])
    [record] = _log_of(store).written  # it was written after all: the read-back applies it
    store._apply(record)
    assert decoded == [record]
    assert store.get("c", {"file": "a"}) == {"position": 1}


def test_another_writers_newer_record_applies_and_an_older_one_does_not(
    store: KafkaOffsetStore,
) -> None:
    store.put("c", [({"file": "a"}, {"position": 3})])  # at offset 0
    # another writer's key: same partition, fields spaced and so not canonical
    other_key = b'["c", {"file": "a"}]'
    store._apply(LogRecord(other_key, b'{"position": 7}', 0, 5))
    assert store.get("c", {"file": "a"}) == {"position": 7}
    store._apply(LogRecord(other_key, b'{"position": 1}', 0, 4))  # read late: older
    assert store.get("c", {"file": "a"}) == {"position": 7}
    store.put("c", [({"file": "a"}, {"position": 8})])  # at offset 1 of the fake log: older
    assert store.get("c", {"file": "a"}) == {"position": 7}


def test_a_write_read_back_after_a_newer_record_changes_nothing(
    store: KafkaOffsetStore,
) -> None:
    [(key, value)] = encode_records("c", [({"file": "a"}, {"position": 9})])
    store._apply(LogRecord(key, value, 0, 10))
    store.put("c", [({"file": "a"}, {"position": 3})])  # acknowledged at offset 0
    assert store.get("c", {"file": "a"}) == {"position": 9}


def test_freshness_covers_what_it_accepted_without_remembering() -> None:
    freshness = Freshness()
    record = LogRecord(b"k", b"v", 1, 10)
    assert not freshness.covers(b"k", record)
    assert not freshness.covers(b"k", record)  # asking remembers nothing
    assert freshness.accept(b"k", record)
    assert freshness.covers(b"k", record)
    assert freshness.covers(b"k", LogRecord(b"k", b"v", 1, 9))
    assert not freshness.covers(b"k", LogRecord(b"k", b"v", 1, 11))
    assert not freshness.covers(b"k", LogRecord(b"k", b"v", 2, 1))  # another partition

"""``produce.hand_records`` hands a ``str`` key or value to confluent_kafka as it is, for
the client to encode: against a real broker, a batch of ``str`` (ASCII, non-ASCII, empty, a
NUL), bytes and None keys and values, with headers and chosen partitions, lands
byte for byte as the loop it replaced wrote it (``tests/unit/test_hand_records.py``'s
``reference_hand_records``, which encoded them itself), and a lone surrogate fails both the
same way, before anything of its record is sent.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

from connect_grpc.connectors.api import SourceRecord
from connect_grpc.runtime.produce import CachedProducer, ProduceErrors, hand_records
from tests.integration.helpers import read_all
from tests.unit.test_hand_records import reference_hand_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PARTITIONS = 2
TEXTS = ["plain", "é€😀", "", "a\x00b", "x" * 300]


def _records(topic: str) -> list[SourceRecord]:
    values: list[Any] = [*TEXTS, b"bytes\xff", None]
    keys: list[Any] = [None, *TEXTS, b"k\xfe"]
    return [
        SourceRecord(
            {"p": 0}, {"o": n}, topic, value, keys[n % len(keys)],
            None if n % 6 == 0 else n % PARTITIONS,  # the partitioner chooses
            ((("h", b"v" + bytes([n])), ("é", b"")) if n % 2 else ()),
        )
        for n, value in enumerate(values * 3)
    ]


def _never() -> bool:
    return False


def _hand(hand: Any, bootstrap: str, records: list[SourceRecord]) -> int:
    cached = CachedProducer({"bootstrap.servers": bootstrap, "client.id": "hand-records"})
    errors = cached.current = ProduceErrors()
    try:
        produced: int = hand(records, cached.producer, errors, _never)
        assert cached.producer.flush(30) == 0
    finally:
        cached.close()
    assert errors.count == 0, errors.messages
    return produced


def _landed(bootstrap: str, topic: str) -> list[tuple[Any, ...]]:
    """Each record's key, value, headers and, where the record chose it, partition (a
    keyless record without one goes where the client's partitioner puts it)."""
    return sorted(
        (
            repr(m.key()), repr(m.value()), tuple(m.headers() or ()),
            m.partition() if m.headers() or m.key() is not None else None,
        )
        for m in read_all(bootstrap, topic, PARTITIONS)
    )


def test_str_keys_and_values_land_as_the_loop_that_encoded_them_wrote_them(
    kafka_bootstrap: str, kafka_admin: Any, unique_topic: str
) -> None:
    reference, handed = f"{unique_topic}-reference", f"{unique_topic}-handed"
    created = kafka_admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (reference, handed)])
    for future in created.values():
        future.result(30)
    records = _records(handed)
    expected = [SourceRecord(r.source_partition, r.source_offset, reference, r.value, r.key,
                             r.kafka_partition, r.headers) for r in records]

    assert _hand(hand_records, kafka_bootstrap, records) == len(records)
    assert _hand(reference_hand_records, kafka_bootstrap, expected) == len(records)

    landed = _landed(kafka_bootstrap, handed)
    assert landed == _landed(kafka_bootstrap, reference)
    assert sorted(value for _, value, _, _ in landed) == sorted(
        repr(r.value.encode() if isinstance(r.value, str) else r.value) for r in records
    )


@pytest.mark.parametrize("field", ["value", "key"])
def test_a_lone_surrogate_fails_as_it_did(kafka_bootstrap: str, field: str) -> None:
    bad = "bad\ud800"
    record = SourceRecord({}, {}, "never-created", b"v", b"k")
    setattr(record, field, bad)
    for hand in (hand_records, reference_hand_records):
        cached = CachedProducer({"bootstrap.servers": kafka_bootstrap, "client.id": "surrogate"})
        try:
            with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
                hand([record], cached.producer, ProduceErrors(), _never)
            assert len(cached.producer) == 0  # nothing of it queued
        finally:
            cached.close()

"""Several ranges read at once by a real librdkafka consumer (``range_reader._read_each`` with the
sink reader's settings) give what each range read alone gives: records past a range's end
left out, a partition's stable end (an open transaction) ending its range early, an empty
range, and the consumer fit for the next batch, whose ranges (on partitions paused in the
first) are read as well."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

from connect_grpc.runtime import client_settings, kafka_results, range_reader
from connect_grpc.runtime.batching import OffsetRange
from tests.integration.helpers import create_topic, open_transaction

PARTITIONS = 5
PER_PARTITION = 400


@pytest.fixture(scope="module")
def topic(kafka_bootstrap: str, kafka_admin: AdminClient) -> Iterator[str]:
    """PER_PARTITION records in each partition but the last, whose 50 committed records are
    followed by a transaction left open."""
    name = create_topic(kafka_admin, f"test-together-{uuid.uuid4().hex}", PARTITIONS)
    plain = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
    for partition in range(PARTITIONS - 1):
        for i in range(PER_PARTITION):
            plain.produce(name, f"{partition}:{i}".encode(), partition=partition)
    for i in range(50):
        plain.produce(name, f"{PARTITIONS - 1}:{i}".encode(), partition=PARTITIONS - 1)
    plain.flush(30)
    transaction = open_transaction(kafka_bootstrap, name, PARTITIONS - 1, 20)
    try:
        yield name
    finally:
        transaction.abort_transaction(30)


def _reader(bootstrap: str) -> Any:
    conf = {
        "bootstrap.servers": bootstrap,
        "fetch.wait.max.ms": client_settings.READER_FETCH_WAIT_MS,
        "fetch.queue.backoff.ms": client_settings.READER_FETCH_QUEUE_BACKOFF_MS,
        "group.id": f"together-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": "false",
        "enable.partition.eof": "true",
        "isolation.level": "read_committed",
    }
    return range_reader._CachedConsumer(conf)


def _summary(results: list[kafka_results.RangeResult[Any]]) -> list[tuple[Any, ...]]:
    return [
        (r.partition, r.next_offset, r.failure, [(row.kafka_offset, row.value) for row in r.rows])
        for r in results
    ]


def _read(reader: Any, ranges: list[OffsetRange]) -> list[kafka_results.RangeResult[Any]]:
    results, fit = range_reader._read_each(reader, ranges, range_reader.sink_record_builder)
    assert fit, _summary(results)
    return results


def test_ranges_read_together_give_what_each_gives_alone(kafka_bootstrap: str, topic: str) -> None:
    batches = [
        [
            OffsetRange(topic, 0, 0, 150),  # ends before the partition's end
            OffsetRange(topic, 1, 100, 101),
            OffsetRange(topic, 2, 10, 10),  # empty
            OffsetRange(topic, 3, 0, PER_PARTITION),
            OffsetRange(topic, PARTITIONS - 1, 0, 70),  # past the stable end (50)
        ],
        # the next batch: partitions the first paused once done, from where they ended
        # (partition 0's range in what the first read consumed past its end, partition 1's
        # beyond it), and a partition the first did not read
        [OffsetRange(topic, 0, 150, 390), OffsetRange(topic, 1, 101, 400),
         OffsetRange(topic, 2, 10, 60)],
        # a range that does not start where the last one ended: read afresh
        [OffsetRange(topic, 0, 200, 210), OffsetRange(topic, 2, 60, 400)],
    ]
    together = _reader(kafka_bootstrap)
    alone = _reader(kafka_bootstrap)
    summaries = []
    try:
        for ranges in batches:
            read_together = _summary(_read(together, ranges))
            read_alone = _summary([result for rng in ranges for result in _read(alone, [rng])])
            assert read_together == read_alone
            summaries.append(read_together)
            if len(summaries) == 1:
                # partitions 0 and 1 end before their ends: whichever of the two arrives
                # first comes whole (a consume asks for what all open ranges still need),
                # so the next batch starts on carried messages. (Later batches may not
                # carry: a range whose partition arrives last is consumed to its end.)
                assert together.ahead, "the first read kept what it consumed past its ends"
    finally:
        together.close()
        alone.close()
    # what the reads should give, so that the comparison is not between two wrong answers
    ends = [[(p, end, len(rows)) for p, end, _, rows in summary] for summary in summaries]
    assert ends == [
        [(0, 150, 150), (1, 101, 1), (2, 10, 0), (3, PER_PARTITION, PER_PARTITION),
         (PARTITIONS - 1, 50, 50)],
        [(0, 390, 240), (1, 400, 299), (2, 60, 50)],
        [(0, 210, 10), (2, 400, 340)],
    ]
    assert summaries[1][0][3][0] == (150, b"0:150")
    assert summaries[2][0][3][0] == (200, b"0:200")
    assert summaries[0][4][3][-1] == (49, f"{PARTITIONS - 1}:49".encode())


def test_many_batches_of_many_partitions_read_every_record_once(
    kafka_bootstrap: str, topic: str
) -> None:
    # batches as a sink plans them: each partition's next range from where the last ended
    reader = _reader(kafka_bootstrap)
    positions = dict.fromkeys(range(PARTITIONS - 1), 0)
    seen: dict[int, list[int]] = {partition: [] for partition in positions}
    try:
        for size in (7, 30, 1, 60, 25, 100, 400):
            ranges = [
                OffsetRange(topic, p, start, min(start + size, PER_PARTITION))
                for p, start in positions.items()
            ]
            for result in _read(reader, ranges):
                seen[result.partition] += [row.kafka_offset for row in result.rows]
                positions[result.partition] = result.next_offset
    finally:
        reader.close()
    assert seen == {partition: list(range(PER_PARTITION)) for partition in positions}

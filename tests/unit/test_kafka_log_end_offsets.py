"""KafkaBasedLog's end offsets without a broker: the latest and the earliest offsets (a read to
the end needs both) are asked of the broker together, so a read to the end waits for one
round trip, not two; an empty partition is left out."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

from connect_grpc.storage.kafka_log import KafkaBasedLog
from connect_grpc.storage.log_topic import TopicSpec


@dataclass
class _Offset:
    offset: int


class _Admin:
    """Answers each offsets request with futures resolved only once both specs were asked."""

    def __init__(self, latest: dict[int, int], earliest: dict[int, int]) -> None:
        self._answers = {"latest": latest, "earliest": earliest}
        self.asked: list[str] = []
        self._futures: list[tuple[Future[Any], int]] = []

    def list_offsets(
        self, request: dict[TopicPartition, OffsetSpec], **_: Any
    ) -> dict[TopicPartition, Future[Any]]:
        latest = str(OffsetSpec.latest())  # type: ignore[no-untyped-call]
        kind = "latest" if str(next(iter(request.values()))) == latest else "earliest"
        self.asked.append(kind)
        futures: dict[TopicPartition, Future[Any]] = {}
        for tp in request:
            future: Future[Any] = Future()
            self._futures.append((future, self._answers[kind][tp.partition]))
            futures[tp] = future
        if len(self.asked) == 2:  # the broker answers once both were sent
            for future, offset in self._futures:
                future.set_result(_Offset(offset))
        return futures


def test_both_offsets_are_asked_before_either_is_awaited() -> None:
    admin = _Admin(latest={0: 7, 1: 3}, earliest={0: 2, 1: 3})
    log = KafkaBasedLog({"bootstrap.servers": "127.0.0.1:1"}, TopicSpec("t", 2, 1), print)
    log._admin = admin  # type: ignore[assignment]  # no broker
    log._partitions = [TopicPartition("t", 0), TopicPartition("t", 1)]

    # a lookup that awaited the latest offsets before asking for the earliest would wait
    # for answers that never come (the fake answers only once both are asked)
    assert log._end_offsets(timeout=1.0) == {0: 7}
    assert admin.asked == ["latest", "earliest"]

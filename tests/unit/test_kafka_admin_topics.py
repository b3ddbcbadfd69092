"""The partition counts behind a sink offsets change: a topic created a moment ago, not yet in
the answering broker's metadata, is looked for once more instead of being refused."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from connect_grpc.storage import kafka_admin


@dataclass
class Topic:
    partitions: dict[int, object]
    error: Any = None


@dataclass
class Metadata:
    topics: dict[str, Topic]


@dataclass
class ScriptedAdmin:
    """Answers list_topics with each of ``answers`` in turn (the last one again after)."""

    answers: list[dict[str, int]]
    calls: list[float] = field(default_factory=list)

    def list_topics(self, timeout: float) -> Metadata:
        self.calls.append(timeout)
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        return Metadata({name: Topic(dict.fromkeys(range(n))) for name, n in answer.items()})


@pytest.fixture(autouse=True)
def no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_admin.time, "sleep", lambda seconds: None)


def test_a_topic_missing_at_first_is_found_by_the_second_look() -> None:
    admin = ScriptedAdmin([{"other": 1}, {"other": 1, "new": 3}])
    assert kafka_admin._partition_counts(admin, 30.0, ["new"]) == {"new": 3}
    assert len(admin.calls) == 2


def test_a_topic_that_does_not_exist_is_looked_for_once_more_only() -> None:
    admin = ScriptedAdmin([{"other": 1}])
    assert kafka_admin._partition_counts(admin, 30.0, ["missing", "other"]) == {"other": 1}
    assert len(admin.calls) == 2


def test_every_topic_found_at_once_needs_one_look() -> None:
    admin = ScriptedAdmin([{"a": 1, "b": 2}])
    assert kafka_admin._partition_counts(admin, 30.0, ["a", "b"]) == {"a": 1, "b": 2}
    assert len(admin.calls) == 1


def test_no_second_look_when_the_deadline_leaves_no_time() -> None:
    admin = ScriptedAdmin([{}, {"new": 1}])
    assert kafka_admin._partition_counts(admin, 1.0, ["new"]) == {}
    assert len(admin.calls) == 1


def test_the_child_gives_a_call_only_what_is_left_of_the_callers_deadline() -> None:
    """The deadline travels as an instant: time spent starting the child is not given
    again (it was, as a duration, and a slow start made the parent give up first)."""
    assert kafka_admin.time_left(time.monotonic() - 3.0) == 0.0
    assert 4.0 < kafka_admin.time_left(time.monotonic() + 5.0) <= 5.0

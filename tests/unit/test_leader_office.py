"""A leader's writer serves the leadership it took office in only: once the worker was deposed
it is never used again, even when the worker wins the leadership back before its loop saw the
deposal (LeaderWriter.usable and take_office, on a stand-in for the writer's state; no
broker)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
import structlog

from connect_grpc.cluster.membership import Leadership
from connect_grpc.herder.leader_writer import LeaderWriter


@dataclass
class _Writer:
    usable: bool = True
    closed: bool = False

    def close(self, timeout: float) -> None:
        self.closed = True


@dataclass
class _Election:
    state: Leadership = field(default_factory=lambda: Leadership(leader=True, changes=1))

    def leadership(self) -> Leadership:
        return self.state

    def is_leader(self) -> bool:
        return self.state.leader

    def depose(self) -> None:
        self.state = Leadership(leader=False, changes=self.state.changes + 1)

    def elect(self) -> None:
        self.state = Leadership(leader=True, changes=self.state.changes + 1)


@dataclass
class _Cluster:
    group_id: str = "g"
    config_topic: str = "configs"


@dataclass
class _Herder:
    _election: _Election = field(default_factory=_Election)
    _writer: Any = None
    _term: int = 0
    _office_changes: int = -1
    _writer_lock: threading.Lock = field(default_factory=threading.Lock)
    _log: Any = field(default_factory=structlog.get_logger)
    _client: dict[str, str] = field(default_factory=dict)
    _cluster: Any = field(default_factory=lambda: _Cluster())
    _id: str = "w1"

    usable = LeaderWriter.usable
    close = LeaderWriter.close

    def took_office(self, writer: _Writer) -> None:
        """What ``take_office`` records once its writer is open."""
        self._writer, self._term = writer, self._term + 1
        self._office_changes = self._election.leadership().changes


def test_the_writer_serves_the_leadership_it_took_office_in() -> None:
    herder, writer = _Herder(), _Writer()
    herder.took_office(writer)

    assert herder.usable() is writer


@pytest.mark.parametrize("regained", [False, True])
def test_a_deposal_ends_the_writer_even_when_the_leadership_is_won_back(regained: bool) -> None:
    herder, writer = _Herder(), _Writer()
    herder.took_office(writer)

    herder._election.depose()
    if regained:
        herder._election.elect()  # before the leader's loop looked: a new term is due

    assert herder.usable() is None


def test_a_fenced_or_closed_writer_is_not_used() -> None:
    herder, writer = _Herder(), _Writer()
    herder.took_office(writer)
    writer.usable = False

    assert herder.usable() is None


def test_taking_office_again_closes_the_writer_of_the_lost_leadership(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    herder, old = _Herder(), _Writer()
    herder.took_office(old)
    herder._election.depose()
    herder._election.elect()
    opened: list[int] = []

    def stop_at_open(*args: Any, **kwargs: Any) -> Any:
        opened.append(herder._election.leadership().changes)
        raise RuntimeError("no broker here")

    monkeypatch.setattr("connect_grpc.herder.leader_writer.FencedWriter.open", stop_at_open)
    with pytest.raises(RuntimeError):
        LeaderWriter.take_office(herder)  # type: ignore[arg-type]

    assert old.closed and opened == [3]

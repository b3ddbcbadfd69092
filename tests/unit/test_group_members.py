"""The leader's view of the group's members (AssignmentPublisher._group_members): asked of the
group coordinator only after a rebalance it was told of; once it is MEMBERS_REFRESH_S old, asked
again after the step (``_recheck_members``), so that a run woken by a write does not wait for
the admin call before it places a new connector."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from connect_grpc.herder import leader_assignment
from connect_grpc.herder.leader_assignment import AssignmentPublisher


@dataclass
class _Admin:
    members: list[str]
    calls: int = 0
    fail: bool = False

    def call(self, name: str, *args: Any) -> list[str]:
        assert name == "group_members"
        self.calls += 1
        if self.fail:
            raise RuntimeError("the coordinator did not answer")
        return list(self.members)


@dataclass
class _Cluster:
    group_id: str = "g"


@dataclass
class _Election:
    def is_leader(self) -> bool:
        return True


@dataclass
class _Leader:
    _admin: _Admin
    _id: str = "w1"
    _cluster: _Cluster = field(default_factory=_Cluster)
    _election: _Election = field(default_factory=_Election)
    _rebalances: int = 0
    _members: tuple[int, float, frozenset[str]] | None = None
    _leader_wake: threading.Event = field(default_factory=threading.Event)

    _group_members = AssignmentPublisher._group_members
    _ask_members = AssignmentPublisher._ask_members
    _recheck_members = AssignmentPublisher._recheck_members
    _on_group_rebalanced = AssignmentPublisher.on_group_rebalanced


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [100.0]
    monkeypatch.setattr(leader_assignment.time, "monotonic", lambda: now[0])
    return now


def test_members_are_asked_once_until_a_rebalance(clock: list[float]) -> None:
    leader = _Leader(_Admin(["w2", "w3"]))
    assert leader._group_members() == {"w1", "w2", "w3"}
    assert leader._group_members() == {"w1", "w2", "w3"}
    assert leader._admin.calls == 1
    leader._admin.members = ["w2"]
    leader._on_group_rebalanced()
    assert leader._leader_wake.is_set()
    assert leader._group_members() == {"w1", "w2"}
    assert leader._admin.calls == 2


def test_old_members_serve_the_step_and_are_asked_again_after_it(clock: list[float]) -> None:
    leader = _Leader(_Admin(["w2"]))
    leader._group_members()
    clock[0] += leader_assignment.MEMBERS_REFRESH_S
    leader._admin.members = ["w2", "w3"]
    used = leader._group_members()
    assert used == {"w1", "w2"} and leader._admin.calls == 1  # no admin call before the step
    leader._recheck_members(used)
    assert leader._admin.calls == 2
    assert leader._leader_wake.is_set()  # they changed: another step, with the new members
    assert leader._group_members() == {"w1", "w2", "w3"}
    assert leader._admin.calls == 2


def test_members_asked_again_unchanged_do_not_wake_the_loop(clock: list[float]) -> None:
    leader = _Leader(_Admin(["w2"]))
    used = leader._group_members()
    leader._recheck_members(used)
    assert leader._admin.calls == 1  # not old yet
    clock[0] += leader_assignment.MEMBERS_REFRESH_S
    leader._recheck_members(used)
    assert leader._admin.calls == 2
    assert not leader._leader_wake.is_set()


def test_a_failed_ask_after_a_rebalance_is_asked_again(clock: list[float]) -> None:
    leader = _Leader(_Admin(["w2"]))
    leader._group_members()
    leader._on_group_rebalanced()
    leader._admin.fail = True
    with pytest.raises(RuntimeError):
        leader._group_members()
    leader._admin.fail = False
    leader._admin.members = ["w3"]
    assert leader._group_members() == {"w1", "w3"}

"""Which config changes wake the leader's loop (DistributedHerder._on_config_change, on a
stand-in for the herder's state): only those that may call for a new assignment. A restart
request, a target state or a recorded answer moves no instance; waking the loop for them
cost the leader a look at the group's members on every pause and resume."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest

from connect_grpc.cluster.extension_records import ASSIGNMENT_KEY
from connect_grpc.herder.distributed import DistributedHerder
from connect_grpc.kernel.domain import RestartRequest
from connect_grpc.storage.config_snapshot import ConfigSnapshot


@dataclass
class _Reconciler:
    restarts: list[RestartRequest] = field(default_factory=list)
    wakes: int = 0
    for_assignment: int = 0

    def wake_for_assignment(self) -> None:
        self.for_assignment += 1

    def queue_restart(self, request: RestartRequest) -> None:
        self.restarts.append(request)

    def wake(self) -> None:
        self.wakes += 1


@dataclass
class _View:
    def observe_session_key(self) -> None:
        """Not the subject here."""


@dataclass
class _Configs:
    def snapshot(self) -> ConfigSnapshot:
        """No connector (a started one left without task configs is not the subject)."""
        return ConfigSnapshot()


@dataclass
class _Election:
    leader: bool = True

    def is_leader(self) -> bool:
        return self.leader


@dataclass
class _Herder:
    _reconciler: _Reconciler = field(default_factory=_Reconciler)
    _election: _Election = field(default_factory=_Election)
    _leader_wake: threading.Event = field(default_factory=threading.Event)
    _listening: bool = True
    _view: _View = field(default_factory=_View)
    _configs: _Configs = field(default_factory=_Configs)

    _on_config_change = DistributedHerder._on_config_change


@pytest.mark.parametrize("kind", ["connector", "tasks"])
def test_a_change_that_may_move_instances_wakes_the_leader(kind: str) -> None:
    herder = _Herder()
    herder._on_config_change(kind, "c", None)
    assert herder._leader_wake.is_set() and herder._reconciler.wakes == 1


def test_a_restart_request_goes_to_the_reconciler_and_leaves_the_leader_asleep() -> None:
    herder = _Herder()
    request = RestartRequest("c", include_tasks=True, only_failed=True)
    herder._on_config_change("restart", "c", request)
    assert herder._reconciler.restarts == [request] and herder._reconciler.wakes == 1
    assert not herder._leader_wake.is_set()


@pytest.mark.parametrize("kind", ["target_state", "extension", "task_count"])
def test_a_change_that_moves_no_instance_leaves_the_leader_asleep(kind: str) -> None:
    herder = _Herder()
    herder._on_config_change(kind, "c", None)
    assert not herder._leader_wake.is_set() and herder._reconciler.wakes == 1


def test_a_follower_is_never_woken_as_leader() -> None:
    herder = _Herder(_election=_Election(leader=False))
    herder._on_config_change("connector", "c", None)
    assert not herder._leader_wake.is_set() and herder._reconciler.wakes == 1


def test_a_new_assignment_wakes_the_reconciler_as_an_assignment() -> None:
    """The reconciler then runs its round at once when the assignment gives this worker an
    instance (``Reconciler.wake_for_assignment``); the leader stays asleep."""
    herder = _Herder()
    herder._on_config_change("extension", ASSIGNMENT_KEY, None)
    assert herder._reconciler.for_assignment == 1 and herder._reconciler.wakes == 0
    assert not herder._leader_wake.is_set()

"""The leader's loop wakes when a worker confirms an assignment generation (its worker record
in the status topic), not only at its tick: DistributedHerder._on_status_extension alone, on a
stand-in for the herder's state."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from connect_grpc.cluster.extension_records import worker_key
from connect_grpc.herder.distributed import DistributedHerder


@dataclass
class Election:
    leader: bool

    def is_leader(self) -> bool:
        return self.leader


@dataclass
class HerderState:
    _election: Election
    _leader_wake: threading.Event = field(default_factory=threading.Event)


def _told(state: HerderState, key: str) -> bool:
    DistributedHerder._on_status_extension(cast(Any, state), key)
    return state._leader_wake.is_set()


def test_a_workers_confirmation_wakes_the_leader() -> None:
    assert _told(HerderState(Election(leader=True)), worker_key("worker-1"))


@pytest.mark.parametrize(
    ("leader", "key"),
    [
        (False, worker_key("worker-1")),  # a follower has no assignment to publish
        (True, "connect-grpc-topic-tracking"),  # another extension record
    ],
)
def test_nothing_else_wakes_it(leader: bool, key: str) -> None:
    assert not _told(HerderState(Election(leader=leader)), key)

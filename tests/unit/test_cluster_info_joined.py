"""GetClusterInfo's ``joined`` (``DistributedReads._joined``, on a stand-in for the reads'
state; no broker): a worker says it has joined only while it is a member of the group and
the assignment it last read names it. A worker that has just started reads the last
published assignment, which may name itself and workers gone since, before it joins."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from connect_grpc.cluster.extension_records import AssignmentRecord, WorkerAssignment
from connect_grpc.herder.distributed_reads import DistributedReads


@dataclass
class _Election:
    member: bool

    def is_member(self) -> bool:
        return self.member


@dataclass
class _Herder:
    _election: _Election
    _id: str = "w1"

    _joined = DistributedReads._joined


@pytest.mark.parametrize(
    ("member", "named", "joined"),
    [(True, True, True), (False, True, False), (True, False, False), (False, False, False)],
)
def test_a_worker_has_joined_when_a_member_named_by_the_assignment_it_read(
    member: bool, named: bool, joined: bool
) -> None:
    workers = {"w2": WorkerAssignment(), **({"w1": WorkerAssignment()} if named else {})}
    assignment = AssignmentRecord(generation=7, leader_id="w2", workers=workers)
    assert _Herder(_Election(member))._joined(assignment) is joined

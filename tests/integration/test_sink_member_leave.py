"""A sink task's group member leaves its consumer group when closed, partitions or none.

librdkafka closes a ``cooperative-sticky`` member that holds no partition without a
LeaveGroup; the group then waited ``session.timeout.ms`` (45 s by default for a sink) for it
before it rebalanced, and a restarted sink task joining meanwhile waited as long.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from connect_grpc.runtime.sink_task import _Member
from connect_grpc.testing.cluster import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SESSION_MS = 30_000


@pytest.mark.parametrize("strategy", ["cooperative-sticky", "range"])
def test_a_member_without_partitions_leaves_its_group_when_closed(
    kafka_bootstrap: str, kafka_admin: AdminClient, strategy: str
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"leave-{suffix}", f"connect-leave-{suffix}"
    kafka_admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    conf = {
        "bootstrap.servers": kafka_bootstrap,
        "group.id": group,
        "partition.assignment.strategy": strategy,
        "session.timeout.ms": str(SESSION_MS),
        "heartbeat.interval.ms": "500",
        "enable.auto.commit": "false",
    }
    members = [_Member({**conf, "client.id": f"member-{n}"}, [topic]) for n in range(2)]
    try:
        wait_until(lambda: _polled_until_assigned(members), timeout=60, interval=0.05)
        idle = next(m for m in members if not m.assigned)
        busy = next(m for m in members if m.assigned)
        idle.close()
        members.remove(idle)
        # a member that left is dropped by the coordinator at once; one that did not, only
        # when its session expires (30 s)
        wait_until(lambda: _member_count(kafka_admin, group) == 1, timeout=SESSION_MS / 1000 / 3)
        assert busy.assigned == {(topic, 0)}
    finally:
        for member in members:
            member.close()


def _polled_until_assigned(members: list[_Member]) -> bool:
    for member in members:
        member.consumer.poll(0.05)
    return sum(len(m.assigned) for m in members) == 1 and all(
        m.consumer.memberid() for m in members
    )


def _member_count(admin: AdminClient, group: str) -> int:
    time.sleep(0.05)
    return len(admin.describe_consumer_groups([group])[group].result(timeout=5).members)

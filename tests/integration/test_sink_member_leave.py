"""A sink task's group member leaves its consumer group when closed, partitions or none.

librdkafka closes a ``cooperative-sticky`` member that holds no partition without a
LeaveGroup; the group then kept it until ``session.timeout.ms`` (45 s by default for a sink)
expired, and a rebalance meanwhile (a restarted sink task joining) waited for it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from connect_grpc.runtime.sink_member import SinkMember
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
    clients = [f"member-{n}" for n in range(2)]
    members = {client: SinkMember({**conf, "client.id": client}, [topic]) for client in clients}
    try:
        wait_until(lambda: _settled(kafka_admin, group, members), timeout=60, interval=0.05)
        idle = next(m for m in members.values() if not m.assigned)
        idle.close()
        members = {c: m for c, m in members.items() if m is not idle}
        # a member that left is dropped by the coordinator at once; one that did not, only
        # when its session expires (30 s)
        wait_until(
            lambda: len(_describe(kafka_admin, group).members) == 1,
            timeout=SESSION_MS / 1000 / 3,
            interval=0.05,
        )
    finally:
        for member in members.values():
            member.close()


def _settled(admin: AdminClient, group: str, members: dict[str, SinkMember]) -> bool:
    """Whether the group is stable with these members, each holding what the coordinator
    assigned it (one of them the partition)."""
    for member in members.values():
        member.consumer.poll(0.05)
    description = _describe(admin, group)
    held = {
        m.client_id: {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions}
        for m in description.members
    }
    return (
        description.state.name == "STABLE"
        and held == {client: member.assigned for client, member in members.items()}
        and sum(len(member.assigned) for member in members.values()) == 1
    )


def _describe(admin: AdminClient, group: str) -> Any:
    return admin.describe_consumer_groups([group])[group].result(timeout=5)

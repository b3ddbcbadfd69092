"""The auto-restart policy on a cluster: the leader decides, once per failure whichever
worker reported it, and its decisions outlive it.

The leader's thread looks at its view of the statuses at each turn (``LeaderLoop``) and asks
for a due restart through the cluster's own restart path (a KIP-745 restart request with
``include_tasks`` and ``only_failed``, written to the config topic; each worker restarts
its failed instances). Each connector's progress (count, next attempt, last restart, given
up, and the config it belongs to) is written to the status topic under
``connect-grpc-auto-restart-<connector>`` when it changes: every worker shows it in the
connector's status, and a new leader continues from it (docs/decisions: the auto-restart
record).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from connect_grpc.cluster.extension_records import auto_restart_key
from connect_grpc.herder.auto_restart import AutoRestarter, wall_clock_ms
from connect_grpc.herder.auto_restart_policy import (
    AutoRestartPolicy,
    AutoRestartState,
    config_digest,
)
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import AutoRestartStatus, ConnectorStatus, RestartRequest
from connect_grpc.storage.kafka_status import KafkaStatusStore

#: The longest the leader's restart waits for its connector (its lock, the status topic's
#: end): the next turn tries again.
RESTART_CALL_S = 5.0


def persisted_progress(statuses: KafkaStatusStore, name: str) -> Mapping[str, Any] | None:
    """The connector's progress as the status topic holds it (None: none)."""
    key = auto_restart_key(name)
    value = statuses.extensions(key).get(key)
    return value if isinstance(value, Mapping) else None


def shown_progress(
    statuses: KafkaStatusStore, name: str, config: Mapping[str, str]
) -> AutoRestartStatus | None:
    """What the connector's status shows of its policy on any worker: None when the policy
    is off; the leader's last written progress for this config, else none yet."""
    if not AutoRestartPolicy.of(config).enabled:
        return None
    value = persisted_progress(statuses, name)
    if value is None:
        return AutoRestartStatus()
    state = AutoRestartState.from_json(value)
    return state.shown() if state.digest == config_digest(config) else AutoRestartStatus()


def leader_auto_restarter(
    view: ClusterView,
    status: Callable[[str], ConnectorStatus],
    restart: Callable[[RestartRequest], object],
    log: Any,
    clock_ms: Callable[[], int] = wall_clock_ms,
) -> AutoRestarter:
    """The leader's decider: ``status`` is the reads' ``connector_status``, ``restart`` the
    mutations' ``restart_connector``."""
    statuses = view.statuses

    def ask(name: str) -> None:
        with deadline.scope(RESTART_CALL_S):
            restart(RestartRequest(name, include_tasks=True, only_failed=True))

    def persist(name: str, value: dict[str, Any] | None) -> None:
        statuses.put_extension(auto_restart_key(name), value)

    return AutoRestarter(
        configs=lambda: view.snapshot().connectors,
        status=status,
        restart=ask,
        persist=persist,
        load=lambda name: persisted_progress(statuses, name),
        clock_ms=clock_ms,
        log=log,
    )

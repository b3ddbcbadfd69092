"""The auto-restart policy on a cluster: the leader decides, once per failure whichever
worker reported it, and its decisions outlive it.

The leader's thread looks at its view of the statuses at each turn (``LeaderLoop``) and asks
for a due restart through the cluster's own restart path (a KIP-745 restart request with
``include_tasks`` and ``only_failed``, written to the config topic; each worker restarts
its failed instances). Each connector's progress (count, next attempt, last restart, given
up, the start of a healthy period that may reset the count, the instances a restart awaits,
and the config it belongs to) is written to the config topic under
``connect-grpc-auto-restart-<connector>`` when it changes, without a transaction and
stamped with the leader's term, as its other unfenced writes
(``LeaderWriter.write_in_term``): every worker ignores a record a deposed leader wrote
after its successor's term marker, so what every worker shows, and what a new leader
continues from, is only ever a leader's in its term. The progress that counts a restart is
carried by the restart request's own record (applied with it or not at all), so a leader
that dies right after asking leaves either both or neither (docs/decisions: the
auto-restart records).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from connect_grpc.cluster.extension_records import AUTO_RESTART_KEY_PREFIX, auto_restart_key
from connect_grpc.herder.auto_restart import AutoRestarter, wall_clock_ms
from connect_grpc.herder.auto_restart_policy import (
    AutoRestartPolicy,
    AutoRestartState,
    config_digest,
)
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import AutoRestartStatus, ConnectorStatus, RestartRequest
from connect_grpc.metrics.auto_restart_metrics import AutoRestartMetrics
from connect_grpc.storage.config_codec import RawRecord, extension_record
from connect_grpc.storage.config_snapshot import ConfigSnapshot

#: The longest the leader's restart waits for its connector (its lock, the status topic's
#: end), and its write of the progress: the next turn tries again.
RESTART_CALL_S = 5.0


def persisted_progress(snapshot: ConfigSnapshot, name: str) -> AutoRestartState | None:
    """The connector's progress as the config topic holds it (None: none, or a value no
    leader of this version wrote)."""
    value = snapshot.extensions.get(auto_restart_key(name))
    if not isinstance(value, Mapping):
        return None
    try:
        return AutoRestartState.from_json(value)
    except (TypeError, ValueError):
        return None


def stored_progress(snapshot: ConfigSnapshot) -> list[str]:
    """The connectors whose progress the config topic holds."""
    return [key[len(AUTO_RESTART_KEY_PREFIX):] for key in snapshot.extensions
            if key.startswith(AUTO_RESTART_KEY_PREFIX)]


def shown_progress(
    snapshot: ConfigSnapshot, name: str, config: Mapping[str, str]
) -> AutoRestartStatus | None:
    """What the connector's status shows of its policy on any worker: None when the policy
    is off; the leader's last written progress for this config, else none yet."""
    if not AutoRestartPolicy.of(config).enabled:
        return None
    state = persisted_progress(snapshot, name)
    if state is None or state.digest != config_digest(config):
        return AutoRestartStatus()
    return state.shown()


class RestartCarrying(Protocol):
    """The cluster's flagged restart whose request record carries extension records
    (``DistributedMutations.restart_connector``)."""

    def __call__(
        self, request: RestartRequest, *, carried: Sequence[RawRecord] = ...
    ) -> object: ...


def leader_auto_restarter(
    view: ClusterView,
    writer: LeaderWriter,
    status: Callable[[str], ConnectorStatus],
    restart: RestartCarrying,
    log: Any,
    *,
    metrics: AutoRestartMetrics | None = None,
    clock_ms: Callable[[], int] = wall_clock_ms,
) -> AutoRestarter:
    """The leader's decider: ``status`` is the reads' ``connector_status``, ``restart`` the
    mutations' ``restart_connector``; the progress is written through ``writer`` in the
    leader's term (NotLeaderError once another leader's term began), or, when it counts a
    restart, carried by the restart's request."""

    def ask(name: str) -> None:
        with deadline.scope(RESTART_CALL_S):
            restart(RestartRequest(name, include_tasks=True, only_failed=True))

    def ask_carrying(name: str, value: dict[str, Any]) -> None:
        with deadline.scope(RESTART_CALL_S):
            restart(RestartRequest(name, include_tasks=True, only_failed=True),
                    carried=[extension_record(auto_restart_key(name), value)])

    def persist(name: str, value: dict[str, Any] | None) -> None:
        with deadline.scope(RESTART_CALL_S):
            writer.write_in_term([extension_record(auto_restart_key(name), value)], None)

    def load(name: str) -> dict[str, Any] | None:
        state = persisted_progress(view.snapshot(), name)
        return None if state is None else state.to_json()

    return AutoRestarter(
        configs=lambda: view.snapshot().connectors,
        status=status,
        restart=ask,
        restart_carrying=ask_carrying,
        persist=persist,
        load=load,
        stored=lambda: stored_progress(view.snapshot()),
        metrics=metrics,
        clock_ms=clock_ms,
        log=log,
    )

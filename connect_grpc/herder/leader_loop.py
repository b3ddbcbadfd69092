"""The leader thread of a distributed worker: take office, do the leader's duties, or step
down.

Woken by a change that may call for a new assignment (and every ``TICK_S`` anyway), it takes
office while this worker leads (``LeaderWriter.take_office``), finishes the removals and
stops cut short, rotates the session key when it is old, publishes the next assignment step,
now and then tombstones expired answers, and carries out the connectors' auto-restart
policies (``leader_auto_restart``); on any other worker it closes the writer.
Separate from its duties, each in its own module, so that the order of a leader's run reads
in one place.

Locks: none of its own. Each run is bounded by one deadline scope
(``LEADER_CALL_TIMEOUT_S``), which bounds every connector-lock wait and Kafka call of its
duties.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.cluster.fenced_writer import FencedWriter
from connect_grpc.cluster.membership import LeaderElection
from connect_grpc.herder.auto_restart import AutoRestarter
from connect_grpc.herder.cut_short_writes import CutShortWrites
from connect_grpc.herder.distributed_view import LEADER_CALL_TIMEOUT_S, ClusterView, now_ms
from connect_grpc.herder.leader_assignment import AssignmentPublisher
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.recorded_answers import ANSWER_EXPIRY_INTERVAL_S, RecordedAnswers
from connect_grpc.herder.ticker import run_ticks
from connect_grpc.kernel import deadline
from connect_grpc.security.session_key import SessionKey
from connect_grpc.storage.config_codec import session_key_record

#: How often the leader re-checks the group's members without being woken by a change.
TICK_S = 0.5


class LeaderLoop:
    """The leader thread's loop (``run`` is the thread's target)."""

    def __init__(
        self,
        view: ClusterView,
        writer: LeaderWriter,
        election: LeaderElection,
        *,
        cut_short: CutShortWrites,
        assignment: AssignmentPublisher,
        answers: RecordedAnswers,
        auto_restart: AutoRestarter | None = None,
        cluster: DistributedConfig,
        wake: threading.Event,
        stopping: threading.Event,
        log: Any,
    ) -> None:
        self._view = view
        self._writer = writer
        self._election = election
        self._cut_short = cut_short
        self._assignment = assignment
        self._answers = answers
        self._auto_restart = auto_restart
        self._cluster = cluster
        self._leader_wake = wake
        self._stopping = stopping
        self._log = log
        self._next_expiry = 0.0
        #: The term the auto-restart decider's memory belongs to.
        self._auto_restart_term = 0

    def run(self, beat: Callable[[], None] | None = None) -> None:
        """``beat`` is called at each turn of the loop (its liveness heartbeat)."""
        run_ticks(
            self._lead_or_step_down,
            wake=self._leader_wake,
            stopping=self._stopping,
            tick_s=TICK_S,
            log=self._log,
            failure_event="leader_duties_failed",
            beat=beat,
        )

    def _lead_or_step_down(self) -> None:
        if self._election.is_leader():
            self._lead()
        else:
            self._writer.close()
            if self._auto_restart is not None:
                # the next leader continues from what the config topic holds
                self._auto_restart.forget_all()

    def _lead(self) -> None:
        with deadline.scope(LEADER_CALL_TIMEOUT_S):
            if self._writer.usable() is None:  # taking office: publishing comes next
                self._assignment.prepare()
            writer = self._writer.take_office()
            self._cut_short.finish_removals(writer)
            self._cut_short.finish_stops(writer)
            self._rotate_session_key(writer)
            self._assignment.publish()
            if time.monotonic() >= self._next_expiry:
                self._next_expiry = time.monotonic() + ANSWER_EXPIRY_INTERVAL_S
                self._answers.expire(writer)
            if self._auto_restart is not None:
                self._look_at_auto_restarts(self._auto_restart)

    def _look_at_auto_restarts(self, decider: AutoRestarter) -> None:
        """The decider's memory serves one term: a leadership won again after another
        leader's term (even one this loop did not see) continues from what the config
        topic holds, as any new leader does."""
        term = self._writer.office_term()
        if term != self._auto_restart_term:
            decider.forget_all()
            self._auto_restart_term = term
        decider.tick()

    def _rotate_session_key(self, writer: FencedWriter) -> None:
        """Writes a new session key once the current one is ``inter.worker.key.ttl.ms``
        old (the previous one stays valid for calls signed before workers read it)."""
        current_ms = now_ms()
        current = self._view.session_key()
        if current is not None and not current.expired(current_ms, self._cluster.key_ttl_ms):
            return
        key = SessionKey.generate(current_ms)
        self._writer.write(writer, [session_key_record(key.to_json())], wake_leader=False)
        self._log.info("session_key_rotated", created_ms=key.created_ms)

"""Carries out each connector's auto-restart policy (``auto_restart_policy``): looks at the
statuses, asks for the restarts that are due, and keeps each connector's progress.

One ``AutoRestarter`` decides for the whole worker (standalone) or the cluster (the
leader's, distributed): a failure is restarted once, whichever worker reported it. A
restart is a KIP-745 restart with ``include_tasks`` and ``only_failed``, asked for through
the herder's own restart path. A look (``tick``) reads statuses and configs from memory and
asks for at most the restarts that are due; it never sleeps: the caller's loop comes back
by ``tick``'s answer (the time to the next due attempt) or on a status change.

Progress that must outlive the decider (distributed: a new leader) goes to ``persist`` when
it differs from what was last persisted (a write that failed is made again at the next
look), or, for the progress that counts a restart, with the restart's own request
(``restart_carrying``: one write, so that a decider that dies between them can neither
restart twice nor lose the count; one that may have been written, its answer lost, is
taken as made and its progress written alone at the next look), and comes back through
``load`` for a connector the decider has no memory of;
``stored`` names the connectors with persisted progress, so that the progress of a
connector deleted while no decider knew it is removed too. The restarts it makes and where
each policy stands go to the worker's metrics (``metrics.auto_restart_metrics``).

Lock: one of its own, over its maps only; restarts, persisting and loading run outside it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from connect_grpc.herder.auto_restart_policy import (
    AutoRestartPolicy,
    AutoRestartState,
    config_digest,
    decide,
)
from connect_grpc.kernel.domain import AutoRestartStatus, ConnectorStatus
from connect_grpc.kernel.errors import ConnectError, NotLeaderError
from connect_grpc.metrics.auto_restart_metrics import AutoRestartMetrics

log = structlog.get_logger(__name__)

#: The longest a caller's loop should wait between two looks with nothing due.
IDLE_LOOK_S = 1.0


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class AutoRestarter:
    """The policy's decider. Thread-safe; ``tick`` is called from one thread."""

    def __init__(
        self,
        *,
        configs: Callable[[], Mapping[str, Mapping[str, str]]],
        status: Callable[[str], ConnectorStatus],
        restart: Callable[[str], None],
        restart_carrying: Callable[[str, dict[str, Any]], None] | None = None,
        persist: Callable[[str, dict[str, Any] | None], None] | None = None,
        load: Callable[[str], Mapping[str, Any] | None] | None = None,
        stored: Callable[[], Iterable[str]] | None = None,
        metrics: AutoRestartMetrics | None = None,
        clock_ms: Callable[[], int] = wall_clock_ms,
        log: Any = log,
    ) -> None:
        """``configs``: every connector's config by name; ``status``: a connector's status
        (NotFoundError when gone); ``restart``: asks for the connector's restart of its
        failed instances (raises ConnectError when it could not: tried at the next look);
        ``restart_carrying``: instead of ``restart`` and then ``persist``, asks for the
        restart with the progress that counts it, in one write (raises NotLeaderError
        when it surely was not made, another ConnectError when it could not, or cannot
        tell whether it was made: it is then taken as made);
        ``persist``/``load``: where progress outlives this decider (None: memory only;
        ``persist`` raises ConnectError when it could not write); ``stored``: the connectors
        whose progress is persisted; ``metrics``: where the restarts are counted and the
        progress exported (None: nowhere)."""
        self._configs = configs
        self._status = status
        self._restart = restart
        self._restart_carrying = restart_carrying
        self._persist = persist
        self._load = load
        self._stored = stored
        self._metrics = metrics
        self._clock_ms = clock_ms
        self._log = log
        self._lock = threading.Lock()
        self._states: dict[str, AutoRestartState] = {}
        #: What was last persisted (or loaded) for each connector the decider knows.
        self._persisted: dict[str, dict[str, Any]] = {}
        if metrics is not None:
            metrics.watch(self)

    def status_of(self, name: str) -> AutoRestartStatus | None:
        """The progress a status shows; None when the decider has none for it."""
        with self._lock:
            state = self._states.get(name)
        return None if state is None else state.shown()

    def progress(self) -> dict[str, AutoRestartStatus]:
        """Every connector the decider carries out the policy of, and where it stands."""
        with self._lock:
            return {name: state.shown() for name, state in self._states.items()}

    def forget_all(self) -> None:
        """Drops every connector's memory (a leader deposed: the next one reads the
        persisted progress) and its series."""
        with self._lock:
            self._states.clear()
            self._persisted.clear()
        if self._metrics is not None:
            self._metrics.forget_all()

    def tick(self) -> float:
        """Looks at every connector whose policy is on; returns the seconds until the next
        attempt due (at most ``IDLE_LOOK_S``)."""
        configs = self._configs()
        now = self._clock_ms()
        wait_ms = IDLE_LOOK_S * 1000
        stored = set(self._stored()) if self._stored is not None else set()
        with self._lock:
            gone = (set(self._states) | stored) - set(configs)
        for name in gone:
            self._forget(name, name in stored)
        for name, config in configs.items():
            policy = AutoRestartPolicy.of(config)
            if not policy.enabled:
                self._forget(name, name in stored)
                continue
            try:
                state = self._look(name, policy, config_digest(config), now)
            except ConnectError as exc:
                self._log.warning("auto_restart_look_failed", connector=name, error=exc.message)
                continue
            if state.next_attempt_ms:
                wait_ms = min(wait_ms, max(0, state.next_attempt_ms - now))
        return wait_ms / 1000

    def _look(
        self, name: str, policy: AutoRestartPolicy, digest: str, now: int
    ) -> AutoRestartState:
        with self._lock:
            before = self._states.get(name)
        if before is None:
            before = self._loaded(name)
        status = self._status(name)
        decision = decide(policy, before, status, now, digest)
        after = decision.state
        if decision.restart:
            try:
                self._ask(name, after)
            except ConnectError as exc:
                return self._not_asked(name, before, after, exc)
            self._log.info("auto_restart", connector=name, count=after.count,
                           max_attempts=policy.max_attempts)
            if self._metrics is not None:
                restarted = after.pending or frozenset()
                self._metrics.restarted(
                    name, sorted(key for key, _ in restarted if isinstance(key, int)))
        elif after.gave_up and not before.gave_up:
            self._log.warning("auto_restart_gave_up", connector=name, count=after.count,
                              max_attempts=policy.max_attempts)
        elif after.count == 0 and before.count:
            self._log.info("auto_restart_reset", connector=name, after_count=before.count,
                           healthy_since_ms=before.healthy_since_ms or None)
        with self._lock:
            self._states[name] = after
        self._persist_changed(name, after.to_json())
        return after

    def _ask(self, name: str, after: AutoRestartState) -> None:
        """Asks for the restart ``after`` counts, with ``after`` persisted in the same write
        when the decider persists its progress that way."""
        if self._restart_carrying is None:
            self._restart(name)
            return
        value = after.to_json()
        self._restart_carrying(name, value)
        with self._lock:
            self._persisted[name] = value

    def _not_asked(
        self, name: str, before: AutoRestartState, after: AutoRestartState, exc: ConnectError
    ) -> AutoRestartState:
        """The state after ``_ask`` raised: ``before`` when the restart was surely not
        asked for, ``after`` when it may have been."""
        surely_not = self._restart_carrying is None or isinstance(exc, NotLeaderError)
        self._log.warning("auto_restart_not_asked" if surely_not else "auto_restart_ask_unsure",
                          connector=name, error=exc.message)
        with self._lock:
            if self._restart_carrying is None:
                self._states[name] = before  # asked for again at the next look
                return before
            if surely_not:
                # refused as a deposed leader's, or never sent: the next look takes the
                # progress back from the config topic, as a new leader would
                self._states.pop(name, None)
                self._persisted.pop(name, None)
                return before
            # the request may have landed (its read-back timed out) before this worker's
            # view read it: the progress taken back from that view would be the one from
            # before, with the same restart due at once. Kept as asked for, the restart is
            # awaited (a failure it never shows counts again after RESTART_UNSEEN_MS), and
            # the next look writes the progress that counts it alone, so that the config
            # topic holds it whether or not the request's record landed.
            self._states[name] = after
            self._persisted.pop(name, None)
            return after

    def _persist_changed(self, name: str, value: dict[str, Any]) -> None:
        """Persists the progress unless it is what was persisted last; a failed write
        raises, and is made again at the next look."""
        if self._persist is None:
            return
        with self._lock:
            unchanged = self._persisted.get(name) == value
        if unchanged:
            return
        self._persist(name, value)
        with self._lock:
            if name in self._states:  # not dropped meanwhile
                self._persisted[name] = value

    def _loaded(self, name: str) -> AutoRestartState:
        if self._load is None:
            return AutoRestartState()
        value = self._load(name)
        if value is None:
            return AutoRestartState()
        state = AutoRestartState.from_json(value)
        with self._lock:
            self._persisted[name] = state.to_json()
        # once per connector and decider (a new leader's term): where it takes over
        self._log.info("auto_restart_progress_loaded", connector=name, count=state.count,
                       next_attempt_ms=state.next_attempt_ms or None, gave_up=state.gave_up,
                       healthy_since_ms=state.healthy_since_ms or None)
        return state

    def _forget(self, name: str, stored: bool) -> None:
        try:
            self._drop(name, stored)
        except ConnectError as exc:  # the persisted progress stays: removed at a later look
            self._log.warning("auto_restart_look_failed", connector=name, error=exc.message)

    def _drop(self, name: str, stored: bool) -> None:
        """Forgets the connector (gone, or its policy off), and its persisted progress
        when it has any."""
        with self._lock:
            dropped = self._states.pop(name, None)
            self._persisted.pop(name, None)
        if dropped is not None and self._metrics is not None:
            self._metrics.forget(name)
        if (dropped is not None or stored) and self._persist is not None:
            self._persist(name, None)


def run_looks(
    restarter: AutoRestarter,
    *,
    wait: Callable[[float], None],
    stopping: threading.Event,
    log: Any = log,
) -> None:
    """A thread's loop of looks (standalone's): a look, then ``wait`` (a status change or
    the time to the next due attempt, whichever comes first), until ``stopping``."""
    while not stopping.is_set():
        try:
            due = restarter.tick()
        except Exception:
            log.exception("auto_restart_look_failed")
            due = IDLE_LOOK_S
        wait(due)

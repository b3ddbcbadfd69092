"""Carries out each connector's auto-restart policy (``auto_restart_policy``): looks at the
statuses, asks for the restarts that are due, and keeps each connector's progress.

One ``AutoRestarter`` decides for the whole worker (standalone) or the cluster (the
leader's, distributed): a failure is restarted once, whichever worker reported it. A
restart is a KIP-745 restart with ``include_tasks`` and ``only_failed``, asked for through
the herder's own restart path. A look (``tick``) reads statuses and configs from memory and
asks for at most the restarts that are due; it never sleeps: the caller's loop comes back
by ``tick``'s answer (the time to the next due attempt) or on a status change.

Progress that must outlive the decider (distributed: a new leader) goes to ``persist`` when
it changes, and comes back through ``load`` for a connector the decider has no memory of.

Lock: one of its own, over its map of states only; restarts, persisting and loading run
outside it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from connect_grpc.herder.auto_restart_policy import (
    AutoRestartPolicy,
    AutoRestartState,
    config_digest,
    decide,
)
from connect_grpc.kernel.domain import AutoRestartStatus, ConnectorStatus
from connect_grpc.kernel.errors import ConnectError

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
        persist: Callable[[str, dict[str, Any] | None], None] | None = None,
        load: Callable[[str], Mapping[str, Any] | None] | None = None,
        clock_ms: Callable[[], int] = wall_clock_ms,
        log: Any = log,
    ) -> None:
        """``configs``: every connector's config by name; ``status``: a connector's status
        (NotFoundError when gone); ``restart``: asks for the connector's restart of its
        failed instances (raises ConnectError when it could not: tried at the next look);
        ``persist``/``load``: where progress outlives this decider (None: memory only)."""
        self._configs = configs
        self._status = status
        self._restart = restart
        self._persist = persist
        self._load = load
        self._clock_ms = clock_ms
        self._log = log
        self._lock = threading.Lock()
        self._states: dict[str, AutoRestartState] = {}

    def status_of(self, name: str) -> AutoRestartStatus | None:
        """The progress a status shows; None when the decider has none for it."""
        with self._lock:
            state = self._states.get(name)
        return None if state is None else state.shown()

    def forget_all(self) -> None:
        """Drops every connector's memory (a leader deposed: the next one reads the
        persisted progress)."""
        with self._lock:
            self._states.clear()

    def tick(self) -> float:
        """Looks at every connector whose policy is on; returns the seconds until the next
        attempt due (at most ``IDLE_LOOK_S``)."""
        configs = self._configs()
        now = self._clock_ms()
        wait_ms = IDLE_LOOK_S * 1000
        with self._lock:
            gone = set(self._states) - set(configs)
        for name in gone:
            self._drop(name)
        for name, config in configs.items():
            policy = AutoRestartPolicy.of(config)
            if not policy.enabled:
                self._drop(name)
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
                self._restart(name)
            except ConnectError as exc:
                self._log.warning("auto_restart_not_asked", connector=name, error=exc.message)
                with self._lock:
                    self._states[name] = before
                return before
            self._log.info("auto_restart", connector=name, count=after.count,
                           max_attempts=policy.max_attempts)
        elif after.gave_up and not before.gave_up:
            self._log.warning("auto_restart_gave_up", connector=name, count=after.count,
                              max_attempts=policy.max_attempts)
        elif after.count == 0 and before.count:
            self._log.info("auto_restart_reset", connector=name, after_count=before.count)
        with self._lock:
            self._states[name] = after
        if self._persist is not None and after.to_json() != before.to_json():
            self._persist(name, after.to_json())
        return after

    def _loaded(self, name: str) -> AutoRestartState:
        if self._load is None:
            return AutoRestartState()
        value = self._load(name)
        return AutoRestartState() if value is None else AutoRestartState.from_json(value)

    def _drop(self, name: str) -> None:
        with self._lock:
            dropped = self._states.pop(name, None)
        if dropped is not None and self._persist is not None:
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

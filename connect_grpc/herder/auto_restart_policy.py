"""A connector's auto-restart policy (``auto.restart.*``): its keys, its back-off, and the
decision, from one look at the connector's status, whether to restart it now.

Strimzi's KafkaConnector ``autoRestart`` is the anchor: a failed connector or task is
restarted (failed instances only, tasks included) at once, then at growing intervals,
``n * n + n`` steps after the n-th restart, capped; optionally at most a number of times;
the count resets once the connector has been healthy long enough. Here the step and the cap
are keys (their defaults, one minute and an hour, give Strimzi's 0, 2, 6, 12, … 56, 60
minutes), and so are the limit and the healthy period.

Pure: no clock, no threads, no I/O. ``herder.auto_restart`` applies the decisions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from connect_grpc.kernel.configdef import ConfigKey, ConfigType, Importance, at_least, define_all
from connect_grpc.kernel.domain import AutoRestartStatus, ConnectorStatus, State

AUTO_RESTART_ENABLED = "auto.restart.enabled"
AUTO_RESTART_BACKOFF_MIN_MS = "auto.restart.backoff.min.ms"
AUTO_RESTART_BACKOFF_MAX_MS = "auto.restart.backoff.max.ms"
AUTO_RESTART_MAX_ATTEMPTS = "auto.restart.max.attempts"
AUTO_RESTART_RESET_AFTER_MS = "auto.restart.reset.after.ms"
AUTO_RESTART_GROUP = "Auto Restart"

DEFAULT_BACKOFF_MIN_MS = 60_000
DEFAULT_BACKOFF_MAX_MS = 3_600_000
#: ``auto.restart.max.attempts`` and ``auto.restart.reset.after.ms``: no limit / the rule
#: of the back-off (below).
UNSET = -1

#: How long a restart the policy made may go unseen in the status before the policy stops
#: waiting for it (a restart lost with a leader that died just after writing it).
RESTART_UNSEEN_MS = 60_000

AUTO_RESTART_CONFIG = define_all(
    [
        ConfigKey(AUTO_RESTART_ENABLED, ConfigType.BOOLEAN,
                  "Whether the worker restarts the connector and its tasks when they fail "
                  "(failed instances only), after a back-off that grows with each restart.",
                  default=False, importance=Importance.MEDIUM, group=AUTO_RESTART_GROUP,
                  order_in_group=1, display_name="Auto restart enabled"),
        ConfigKey(AUTO_RESTART_BACKOFF_MIN_MS, ConfigType.LONG,
                  "The back-off's step: after n automatic restarts the next one waits "
                  "n * n + n steps (0, 2, 6, 12, ... steps), at most "
                  f"{AUTO_RESTART_BACKOFF_MAX_MS}.", default=DEFAULT_BACKOFF_MIN_MS,
                  importance=Importance.LOW, validator=at_least(0), group=AUTO_RESTART_GROUP,
                  order_in_group=2, display_name="Auto restart back-off step (ms)"),
        ConfigKey(AUTO_RESTART_BACKOFF_MAX_MS, ConfigType.LONG,
                  "The longest back-off between two automatic restarts; at least "
                  f"{AUTO_RESTART_BACKOFF_MIN_MS}.", default=DEFAULT_BACKOFF_MAX_MS,
                  importance=Importance.LOW, validator=at_least(0), group=AUTO_RESTART_GROUP,
                  order_in_group=3, display_name="Auto restart back-off cap (ms)"),
        ConfigKey(AUTO_RESTART_MAX_ATTEMPTS, ConfigType.INT,
                  "The most automatic restarts before the policy gives up and leaves the "
                  "connector FAILED (until a user restarts it or changes its config); -1: no "
                  "limit.", default=UNSET, importance=Importance.LOW, validator=at_least(UNSET),
                  group=AUTO_RESTART_GROUP, order_in_group=4,
                  display_name="Auto restart max attempts"),
        ConfigKey(AUTO_RESTART_RESET_AFTER_MS, ConfigType.LONG,
                  "How long the connector must be healthy (RUNNING, no failed task) before "
                  "the count of automatic restarts goes back to 0; -1: as long as the "
                  "back-off the next restart would wait.", default=UNSET,
                  importance=Importance.LOW, validator=at_least(UNSET),
                  group=AUTO_RESTART_GROUP, order_in_group=5,
                  display_name="Auto restart reset after (ms)"),
    ]
)


def auto_restart_errors(config: Mapping[str, str]) -> dict[str, list[str]]:
    """Every ``auto.restart.*`` key's errors, the cap below the step included."""
    errors = AUTO_RESTART_CONFIG.validate(config)
    if errors[AUTO_RESTART_BACKOFF_MIN_MS] or errors[AUTO_RESTART_BACKOFF_MAX_MS]:
        return errors
    parsed = AUTO_RESTART_CONFIG.parse(
        {key: config[key] for key in (AUTO_RESTART_BACKOFF_MIN_MS, AUTO_RESTART_BACKOFF_MAX_MS)
         if key in config}
    )
    step, cap = parsed[AUTO_RESTART_BACKOFF_MIN_MS], parsed[AUTO_RESTART_BACKOFF_MAX_MS]
    if cap < step:
        errors[AUTO_RESTART_BACKOFF_MAX_MS].append(
            f"Invalid value {cap} for configuration {AUTO_RESTART_BACKOFF_MAX_MS}: Value must "
            f"be at least {AUTO_RESTART_BACKOFF_MIN_MS} ({step})"
        )
    return errors


@dataclass(frozen=True, slots=True)
class AutoRestartPolicy:
    """The parsed ``auto.restart.*`` keys of one connector."""

    enabled: bool = False
    backoff_min_ms: int = DEFAULT_BACKOFF_MIN_MS
    backoff_max_ms: int = DEFAULT_BACKOFF_MAX_MS
    max_attempts: int = UNSET
    reset_after_ms: int = UNSET

    @classmethod
    def of(cls, config: Mapping[str, str]) -> AutoRestartPolicy:
        """The connector's policy; off when its keys are invalid (a config stored before
        they were validated): a policy nobody could have meant is not carried out."""
        if AUTO_RESTART_ENABLED not in config:
            return cls()  # the common case, looked at for every connector at every turn
        if any(auto_restart_errors(config).values()):
            return cls()
        parsed = AUTO_RESTART_CONFIG.parse(
            {key: value for key, value in config.items() if key in AUTO_RESTART_CONFIG.keys}
        )
        return cls(
            enabled=bool(parsed[AUTO_RESTART_ENABLED]),
            backoff_min_ms=int(parsed[AUTO_RESTART_BACKOFF_MIN_MS]),
            backoff_max_ms=int(parsed[AUTO_RESTART_BACKOFF_MAX_MS]),
            max_attempts=int(parsed[AUTO_RESTART_MAX_ATTEMPTS]),
            reset_after_ms=int(parsed[AUTO_RESTART_RESET_AFTER_MS]),
        )

    def backoff_ms(self, restarts: int) -> int:
        """How long the restart after ``restarts`` automatic ones waits after the failure
        (Strimzi's ``n * n + n`` steps, capped)."""
        return min(self.backoff_max_ms, self.backoff_min_ms * (restarts * restarts + restarts))

    def healthy_period_ms(self, restarts: int) -> int:
        """How long the connector must be healthy for the count to reset."""
        if self.reset_after_ms != UNSET:
            return self.reset_after_ms
        return self.backoff_ms(restarts)

    def gives_up(self, restarts: int) -> bool:
        return self.max_attempts != UNSET and restarts >= self.max_attempts


def config_digest(config: Mapping[str, str]) -> str:
    """A short digest of a connector's config: a config change resets the policy."""
    text = json.dumps(sorted(config.items()), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: The failed instances of a status, each with its revision: ("connector", r) or (task, r).
Failures = frozenset[tuple[str | int, int]]


def failures_of(status: ConnectorStatus) -> Failures:
    failed: set[tuple[str | int, int]] = set()
    if status.connector.state is State.FAILED:
        failed.add(("connector", status.connector.revision))
    for task in status.tasks:
        if task.status.state is State.FAILED:
            failed.add((task.id, task.status.revision))
    return frozenset(failed)


@dataclass(frozen=True, slots=True)
class AutoRestartState:
    """One connector's progress under its policy.

    The count, next attempt, last restart and gave-up flag are what a status shows; they,
    the digest and, while there is a count to reset, the start of the healthy period are
    what outlives a leader (``to_json``, written where a new leader reads them). The others
    are the deciding worker's own memory.

    Attributes:
        digest: the config the progress belongs to (``config_digest``).
        seen: the failed instances of the last look (their revisions).
        pending: the failed instances the policy's last restart was for, until the status
            shows it (None: no restart awaited).
        pending_since_ms: when that restart was asked for.
        healthy_since_ms: since when the connector has been RUNNING with no failed task
            (0: it is not), by the wall clock of the worker that saw it.
        awaited: the instances (``"connector"`` or a task's number) a restart was asked
            for, as another decider persisted them with the request (revisions are each
            worker's own): the first look makes them ``pending`` again.
    """

    digest: str = ""
    count: int = 0
    next_attempt_ms: int = 0
    last_restart_ms: int = 0
    gave_up: bool = False
    seen: Failures = field(default_factory=frozenset)
    pending: Failures | None = None
    pending_since_ms: int = 0
    healthy_since_ms: int = 0
    awaited: frozenset[str | int] | None = None

    def shown(self) -> AutoRestartStatus:
        return AutoRestartStatus(
            self.count, self.next_attempt_ms, self.last_restart_ms, self.gave_up
        )

    def to_json(self) -> dict[str, Any]:
        """What outlives a leader. The healthy period's start only while it can reset a
        count: a connector that never failed is not written again each time it stops or
        starts running. The instances a restart was asked for only until the status shows
        it: they are written with the restart's request (one record), so that a new
        leader waits for that restart rather than asking for it again."""
        value: dict[str, Any] = {
            "config": self.digest, "count": self.count, "next_attempt_ms": self.next_attempt_ms,
            "last_restart_ms": self.last_restart_ms, "gave_up": self.gave_up,
        }
        if self.count and self.healthy_since_ms:
            value["healthy_since_ms"] = self.healthy_since_ms
        awaited = self.awaited
        if self.pending is not None:
            awaited = frozenset(instance for instance, _ in self.pending)
        if awaited is not None:
            value["restart_awaited"] = sorted(awaited, key=_instance_order)
            value["restart_asked_ms"] = self.pending_since_ms
        return value

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> AutoRestartState:
        return cls(
            digest=str(value.get("config", "")),
            count=int(value.get("count", 0)),
            next_attempt_ms=int(value.get("next_attempt_ms", 0)),
            last_restart_ms=int(value.get("last_restart_ms", 0)),
            gave_up=bool(value.get("gave_up", False)),
            healthy_since_ms=int(value.get("healthy_since_ms", 0)),
            awaited=_awaited(value.get("restart_awaited")),
            pending_since_ms=int(value.get("restart_asked_ms", 0)),
        )

    def reset(self) -> AutoRestartState:
        """The count back to 0, nothing scheduled (the look's memory kept)."""
        return replace(self, count=0, next_attempt_ms=0, last_restart_ms=0, gave_up=False)


def _instance_order(instance: str | int) -> tuple[bool, str | int]:
    return (isinstance(instance, int), instance if isinstance(instance, int) else str(instance))


def _awaited(value: object) -> frozenset[str | int] | None:
    """The instances a persisted restart was asked for (None: none, or a record of a
    build that did not write them)."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        item == "connector" or (isinstance(item, int) and not isinstance(item, bool))
        for item in value
    ):
        raise ValueError(f"restart_awaited is not a list of instances: {value!r}")
    return frozenset(value)


@dataclass(frozen=True, slots=True)
class Decision:
    """A look's outcome: the new state, and whether to restart now (the state then counts
    the restart; keep the old one if it could not be asked for)."""

    state: AutoRestartState
    restart: bool = False


def decide(
    policy: AutoRestartPolicy,
    state: AutoRestartState,
    status: ConnectorStatus,
    now_ms: int,
    digest: str,
) -> Decision:
    """One look at the connector's ``status`` at ``now_ms``: what the policy does now.

    - A config change (``digest``) resets the progress.
    - A failed instance the policy saw that is no longer failed as it was (another
      revision, or not failed), and not by a restart the policy asked for, was restarted
      by someone else (a user, a reassignment): the progress resets.
    - Nothing failed: the next attempt is dropped; healthy for the policy's period, the
      count resets.
    - Something failed: after ``max_attempts`` restarts the policy gives up; otherwise the
      next attempt is due ``backoff_ms(count)`` after it saw the failure, and once due the
      answer is to restart. Until the status shows that restart (the instances it was for
      change), the policy waits, at most ``RESTART_UNSEEN_MS``.
    """
    if state.digest != digest:
        state = AutoRestartState(digest=digest)
    failures = failures_of(status)
    if state.awaited is not None:
        # another decider's restart, persisted with its request: the instances it was for
        # that are still failed are awaited as if this decider had asked (none: seen)
        awaited = frozenset(failure for failure in failures if failure[0] in state.awaited)
        state = replace(state, awaited=None, pending=awaited or None,
                        pending_since_ms=state.pending_since_ms if awaited else 0)
    if state.pending is not None:
        if failures >= state.pending and now_ms - state.pending_since_ms < RESTART_UNSEEN_MS:
            return Decision(state)
        state = replace(state, pending=None, pending_since_ms=0, seen=frozenset())
    elif state.seen - failures and (state.next_attempt_ms or state.gave_up):
        state = state.reset()
    state = replace(state, seen=failures)
    if not failures:
        return Decision(_healthy(policy, replace(state, next_attempt_ms=0), status, now_ms))
    state = replace(state, healthy_since_ms=0)
    if state.gave_up:
        return Decision(state)
    if not state.next_attempt_ms:
        if policy.gives_up(state.count):
            return Decision(replace(state, gave_up=True))
        state = replace(state, next_attempt_ms=now_ms + policy.backoff_ms(state.count))
    if now_ms < state.next_attempt_ms:
        return Decision(state)
    restarted = replace(
        state, count=state.count + 1, last_restart_ms=now_ms, next_attempt_ms=0,
        pending=failures, pending_since_ms=now_ms,
    )
    return Decision(restarted, restart=True)


def _healthy(
    policy: AutoRestartPolicy, state: AutoRestartState, status: ConnectorStatus, now_ms: int
) -> AutoRestartState:
    if status.connector.state is not State.RUNNING:
        return replace(state, healthy_since_ms=0)
    since = state.healthy_since_ms or now_ms
    state = replace(state, healthy_since_ms=since)
    if state.count and now_ms - since >= policy.healthy_period_ms(state.count):
        return state.reset()
    return state

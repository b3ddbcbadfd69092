"""What ``ctl apply`` would change on one connector, worked out from what the worker holds,
and how it is shown: the config keys added, changed and removed (secrets hidden) and the
target state. Pure: no calls."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from connect_grpc.ctl.apply_specs import MARKER_KEY, state_name
from connect_grpc.kernel.domain import ConfigInfos, State, TargetState

#: What Kafka's ``Password`` shows for a hidden value.
HIDDEN = "[hidden]"
#: A config provider reference (KIP-297, ``${provider:path:key}``): shown as written, since
#: the worker never returns what it resolves to.
_REFERENCE = re.compile(r"\$\{[^}:]+:[^}]*\}")
#: Keys with no definition (a plugin that does not declare them) are hidden by their name.
_SECRET_NAME = re.compile(r"password|secret|credential", re.IGNORECASE)

#: The target state a reported connector state stands for; the others (UNASSIGNED,
#: RESTARTING, RETRYING) do not tell it.
_TARGET_OF_STATE = {
    State.RUNNING: TargetState.STARTED,
    State.FAILED: TargetState.STARTED,
    State.PAUSED: TargetState.PAUSED,
    State.STOPPED: TargetState.STOPPED,
}


@dataclass(frozen=True, slots=True)
class ConfigDiff:
    added: dict[str, str]
    #: key → (now, wanted)
    changed: dict[str, tuple[str, str]]
    removed: dict[str, str]

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    @property
    def keys(self) -> list[str]:
        return sorted([*self.added, *self.changed, *self.removed])


def diff_config(current: Mapping[str, str], wanted: Mapping[str, str]) -> ConfigDiff:
    """The keys ``wanted`` adds to ``current``, changes and removes; the marker apply keeps
    is not part of a spec, so it is never a difference."""
    now = {key: value for key, value in current.items() if key != MARKER_KEY}
    want = {key: value for key, value in wanted.items() if key != MARKER_KEY}
    return ConfigDiff(
        added={key: want[key] for key in sorted(want) if key not in now},
        changed={key: (now[key], want[key]) for key in sorted(want)
                 if key in now and now[key] != want[key]},
        removed={key: now[key] for key in sorted(now) if key not in want},
    )


def target_of(state: State | None) -> TargetState | None:
    """The target state a connector reported in ``state`` holds, when the report tells it."""
    return _TARGET_OF_STATE.get(state) if state is not None else None


def secret_keys(infos: ConfigInfos | None) -> frozenset[str]:
    """The keys the plugin's and the framework's definitions type PASSWORD."""
    if infos is None:
        return frozenset()
    return frozenset(
        info.definition.name for info in infos.configs
        if info.definition is not None and info.definition.type.upper() == "PASSWORD"
    )


def shown_value(key: str, value: str, secrets: frozenset[str], defined: frozenset[str]) -> str:
    """A value as a diff shows it: a reference as written (never resolved); a PASSWORD
    value, or a value of an undefined key named like a secret, hidden."""
    if _REFERENCE.fullmatch(value.strip()):
        return value
    if key in secrets or (key not in defined and _SECRET_NAME.search(key)):
        return HIDDEN
    return value


def diff_lines(
    diff: ConfigDiff, secrets: frozenset[str] = frozenset(),
    defined: frozenset[str] = frozenset(), indent: str = "  ",
) -> list[str]:
    """``+ key: value``, ``~ key: old -> new``, ``- key: old``, sorted by key."""
    lines: list[tuple[str, str]] = []
    for key, value in diff.added.items():
        lines.append((key, f"+ {key}: {shown_value(key, value, secrets, defined)}"))
    for key, (old, new) in diff.changed.items():
        before = shown_value(key, old, secrets, defined)
        after = shown_value(key, new, secrets, defined)
        if before == after:  # both hidden: say that it changes, not to what
            lines.append((key, f"~ {key}: {HIDDEN} (changed)"))
        else:
            lines.append((key, f"~ {key}: {before} -> {after}"))
    for key, value in diff.removed.items():
        lines.append((key, f"- {key}: {shown_value(key, value, secrets, defined)}"))
    return [indent + line for _, line in sorted(lines, key=lambda item: item[0])]


def created_lines(
    config: Mapping[str, str], secrets: frozenset[str] = frozenset(),
    defined: frozenset[str] = frozenset(), indent: str = "  ",
) -> list[str]:
    """Every key of a connector to be created, as added keys."""
    return diff_lines(ConfigDiff(dict(config), {}, {}), secrets, defined, indent)


def defined_keys(infos: ConfigInfos | None) -> frozenset[str]:
    if infos is None:
        return frozenset()
    return frozenset(info.definition.name for info in infos.configs if info.definition is not None)


def state_change_text(now: TargetState | None, reported: State | None, wanted: TargetState) -> str:
    """``PAUSED -> RUNNING``; when the report does not tell the target state, what it says."""
    if now is not None:
        return f"{state_name(now)} -> {state_name(wanted)}"
    seen = reported.value if reported is not None else "no status"
    return f"? ({seen}) -> {state_name(wanted)}"


def result_line(name: str, results: Iterable[str], dry_run: bool) -> str:
    """``connector NAME config changed (...); state changed (...)``, or ``unchanged``."""
    said = "; ".join(results) or "unchanged"
    return f"connector {name} {said}{' (dry run)' if dry_run else ''}"


def config_changed_text(diff: ConfigDiff) -> str:
    return f"config changed ({', '.join(diff.keys)})"

"""Desired-state specs for ``ctl apply``: a connector's config, the target state it is to
hold and the offsets it starts from when it is first created, read from a file or from
every spec file of a directory.

A spec is what ``connect-grpc standalone`` reads (a flat config, or a create request
``{"name", "config", "initial_state", "initial_offsets"}``, in JSON, YAML or properties)
plus a target state: ``state`` beside ``config`` in JSON and YAML, the ``connect-grpc.state``
key in a properties file (removed from the config, as is ``connect-grpc.initial.offsets``,
the initial offsets as JSON text). Strimzi's ``KafkaConnector`` resource is read too, so that
its users' files apply as they are: ``metadata.name`` and ``spec.class``, ``tasksMax``,
``config``, ``state`` (or the older ``pause``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connect_grpc.config.connector_files import load_connector_file, parse_offsets
from connect_grpc.kernel.domain import ConnectorOffset, TargetState
from connect_grpc.kernel.errors import InvalidArgumentError

#: The key ``ctl apply`` adds to the config of each connector it creates, and only of those:
#: ``--prune`` deletes no other connector (docs/decisions/0080-apply-marks-what-it-creates.md).
MARKER_KEY = "connect-grpc.created-by"
MARKER_VALUE = "ctl-apply"
#: A properties spec's target state and initial offsets; never part of the stored config.
STATE_KEY = "connect-grpc.state"
OFFSETS_KEY = "connect-grpc.initial.offsets"
#: The files of a directory that are specs; others (a README, dot files) are skipped.
SPEC_SUFFIXES = (".json", ".yaml", ".yml", ".properties")

_REQUEST_FIELDS = frozenset({"name", "config", "state", "initial_state", "initial_offsets"})
_STRIMZI_KIND = "KafkaConnector"
_STRIMZI_SPEC_FIELDS = frozenset({"class", "tasksMax", "config", "state", "pause"})


@dataclass(frozen=True, slots=True)
class ConnectorSpec:
    """One connector as a spec file wants it."""

    name: str
    #: The config as the spec gives it, with ``name``.
    config: dict[str, str]
    #: The target state to hold on every apply; None: the spec does not say (left as it is).
    state: TargetState | None
    #: The state to create the connector in (``state`` when given, else ``initial_state``).
    initial_state: TargetState
    #: Offsets to start from when the connector is created; never used after.
    initial_offsets: list[ConnectorOffset] | None
    source: Path
    #: What the spec holds that apply ignores (said once on stderr).
    ignored: tuple[str, ...] = field(default=())


def spec_files(paths: Iterable[Path]) -> list[Path]:
    """The files given, and each directory's spec files (by name; not its subdirectories)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(
                child for child in path.iterdir()
                if child.is_file() and not child.name.startswith(".")
                and child.suffix.lower() in SPEC_SUFFIXES
            )
        else:
            found.append(path)
    return found


def load_spec(path: Path) -> ConnectorSpec:
    """Reads one spec; raises InvalidArgumentError naming the file and the field."""
    document = _document(path)
    if isinstance(document, dict) and document.get("kind") == _STRIMZI_KIND:
        return _from_strimzi(path, document)
    try:
        request = load_connector_file(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError.for_field(str(path), f"cannot read: {exc}") from None
    config = dict(request.config)
    state_text: Any = None
    ignored: tuple[str, ...] = ()
    offsets = request.initial_offsets
    initial_given = False
    if isinstance(document, dict) and isinstance(document.get("config"), dict):
        state_text = document.get("state")
        initial_given = document.get("initial_state") is not None
        ignored = tuple(sorted(set(document) - _REQUEST_FIELDS))
    elif document is None:  # properties
        state_text = config.pop(STATE_KEY, None)
        raw_offsets = config.pop(OFFSETS_KEY, None)
        if raw_offsets is not None:
            offsets = _offsets_text(path, raw_offsets)
    name = request.name.strip()
    if not name:
        raise InvalidArgumentError.for_field(
            f"{path}: name", "required: set \"name\" (or a name= line) in the file"
        )
    state = _state(path, "state", state_text)
    if state is not None and initial_given and request.initial_state is not state:
        raise InvalidArgumentError.for_field(
            f"{path}: initial_state",
            f"differs from state ({_shown(state)}): give one of them (state is held on every "
            "apply, and is also the state the connector is created in)",
        )
    return ConnectorSpec(
        name=name,
        config=_checked_config(path, name, config),
        state=state,
        initial_state=state or request.initial_state,
        initial_offsets=offsets,
        source=path,
        ignored=ignored,
    )


def _document(path: Path) -> Any:
    """The parsed JSON or YAML document; None for a properties file."""
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError.for_field(str(path), f"cannot read: {exc}") from None
    import yaml  # only to read a spec: ctl starts without it

    try:
        return json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        kind = "JSON" if suffix == ".json" else "YAML"
        raise InvalidArgumentError.for_field(str(path), f"not valid {kind}: {exc}") from None


def _from_strimzi(path: Path, document: dict[str, Any]) -> ConnectorSpec:
    """Strimzi's KafkaConnector: what it says that a worker honours, and an error for the
    rest (its ``autoRestart`` and offsets operations are the operator's, not the worker's)."""
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError.for_field(f"{path}: metadata.name", "required")
    spec = document.get("spec")
    if not isinstance(spec, dict):
        raise InvalidArgumentError.for_field(f"{path}: spec", "required: an object")
    unknown = sorted(set(spec) - _STRIMZI_SPEC_FIELDS)
    if unknown:
        raise InvalidArgumentError.for_field(
            f"{path}: spec.{unknown[0]}",
            "not supported by ctl apply (it reads class, tasksMax, config, state and pause)",
        )
    raw_config = spec.get("config") or {}
    if not isinstance(raw_config, dict):
        raise InvalidArgumentError.for_field(f"{path}: spec.config", "must be an object")
    config: dict[str, str] = {}
    for key, value in raw_config.items():
        if isinstance(value, (dict, list)):
            raise InvalidArgumentError.for_field(
                f"{path}: spec.config.{key}", "must be a primitive value"
            )
        if value is not None:
            config[str(key)] = json.dumps(value) if isinstance(value, bool) else str(value)
    if spec.get("class") is not None:
        config["connector.class"] = str(spec["class"])
    if spec.get("tasksMax") is not None:
        config["tasks.max"] = str(spec["tasksMax"])
    state = _state(path, "spec.state", spec.get("state"))
    if state is None and spec.get("pause") is True:
        state = TargetState.PAUSED
    if state is None:  # a KafkaConnector without a state runs, as Strimzi runs it
        state = TargetState.STARTED
    name = name.strip()
    return ConnectorSpec(name, _checked_config(path, name, config), state, state, None, path)


def _checked_config(path: Path, name: str, config: dict[str, str]) -> dict[str, str]:
    if MARKER_KEY in config:
        raise InvalidArgumentError.for_field(
            f"{path}: config.{MARKER_KEY}",
            "reserved: ctl apply sets it on the connectors it creates; remove it from the spec",
        )
    if config.get("name", name) != name:
        raise InvalidArgumentError.for_field(
            f"{path}: config.name", f"is {config['name']!r}, but the spec names {name!r}"
        )
    return {**config, "name": name}


def _state(path: Path, where: str, value: Any) -> TargetState | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgumentError.for_field(
            f"{path}: {where}", "must be one of RUNNING, PAUSED, STOPPED"
        )
    try:
        return TargetState.parse_initial(value)
    except ValueError:
        raise InvalidArgumentError.for_field(
            f"{path}: {where}", f"{value!r}: expected one of RUNNING, PAUSED, STOPPED"
        ) from None


def _offsets_text(path: Path, text: str) -> list[ConnectorOffset]:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise InvalidArgumentError.for_field(
            f"{path}: {OFFSETS_KEY}", f"not valid JSON: {exc}"
        ) from None
    if isinstance(document, dict) and "offsets" in document:
        document = document["offsets"]
    return parse_offsets(f"{path}: {OFFSETS_KEY}", document)


def _shown(state: TargetState) -> str:
    return state_name(state)


def state_name(state: TargetState) -> str:
    """RUNNING, PAUSED or STOPPED: a target state as specs and statuses spell it."""
    return "RUNNING" if state is TargetState.STARTED else state.value

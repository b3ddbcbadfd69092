"""Connector files, as ``connect-grpc standalone`` and ``connect-grpc ctl apply`` read them:
flat .properties/.json configs, or a JSON create request ``{"name", "config",
"initial_state", "initial_offsets"}`` (.yaml/.yml files: the same shapes in YAML); and
offsets files (``ctl offsets alter``).

Unknown top-level fields of a create request are ignored, as Kafka Connect does. Pure file
parsing (no herder, no gRPC), so that the worker and the command-line client share it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connect_grpc.kernel.domain import ConnectorOffset, OffsetPrimitive, TargetState
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.kernel.properties import read_properties


@dataclass(frozen=True, slots=True)
class ConnectorRequest:
    name: str
    config: dict[str, str]
    initial_state: TargetState
    initial_offsets: list[ConnectorOffset] | None


def load_connector_file(path: Path) -> ConnectorRequest:
    """Reads one connector file; raises InvalidArgumentError naming the file and field."""
    if path.suffix.lower() == ".json":
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InvalidArgumentError.for_field(str(path), f"not valid JSON: {exc}") from None
        return _from_json(path, document)
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml  # only for a YAML file: ctl starts without it

        try:
            document = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise InvalidArgumentError.for_field(str(path), f"not valid YAML: {exc}") from None
        return _from_json(path, document)
    config = read_properties(path)
    return ConnectorRequest(config.get("name", ""), config, TargetState.STARTED, None)


def _from_json(path: Path, document: Any) -> ConnectorRequest:
    if not isinstance(document, dict):
        raise InvalidArgumentError.for_field(str(path), "expected a JSON object")
    if not isinstance(document.get("config"), dict):
        config = _string_map(path, "", document)
        return ConnectorRequest(config.get("name", ""), config, TargetState.STARTED, None)
    config = _string_map(path, "config", document["config"])
    name = document.get("name", config.get("name", ""))
    if not isinstance(name, str):
        raise InvalidArgumentError.for_field(f"{path}: name", "must be a string")
    return ConnectorRequest(
        name,
        config,
        _initial_state(path, document.get("initial_state")),
        _initial_offsets(path, document.get("initial_offsets")),
    )


def _string_map(path: Path, field: str, values: dict[str, Any]) -> dict[str, str]:
    """Config values as strings; JSON booleans as true/false; a null value counts as absent."""
    result: dict[str, str] = {}
    for key, value in values.items():
        if isinstance(value, (dict, list)):
            where = f"{field}.{key}" if field else key
            raise InvalidArgumentError.for_field(f"{path}: {where}", "must be a primitive value")
        if value is not None:
            result[key] = json.dumps(value) if isinstance(value, bool) else str(value)
    return result


def _initial_state(path: Path, value: Any) -> TargetState:
    if value is None:
        return TargetState.STARTED
    if not isinstance(value, str):
        raise InvalidArgumentError.for_field(
            f"{path}: initial_state", "must be one of RUNNING, PAUSED, STOPPED"
        )
    try:
        return TargetState.parse_initial(value)
    except ValueError as exc:
        raise InvalidArgumentError.for_field(f"{path}: initial_state", str(exc)) from None


def load_offsets_file(path: Path) -> list[ConnectorOffset]:
    """Reads an offsets file: ``{"offsets": [{"partition": {...}, "offset": {...}}, ...]}``
    (what GetOffsets answers and Kafka Connect's PATCH /offsets takes) or the bare list;
    raises InvalidArgumentError naming the file and field."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InvalidArgumentError.for_field(str(path), f"not valid JSON: {exc}") from None
    if isinstance(document, dict):
        if "offsets" not in document:
            raise InvalidArgumentError.for_field(f"{path}: offsets", "required")
        return parse_offsets(f"{path}: offsets", document["offsets"])
    return parse_offsets(str(path), document)


def _initial_offsets(path: Path, value: Any) -> list[ConnectorOffset] | None:
    if value is None:
        return None
    return parse_offsets(f"{path}: initial_offsets", value)


def parse_offsets(where: str, value: Any) -> list[ConnectorOffset]:
    """A JSON list of ``{"partition": {...}, "offset": {...}}`` entries (``offset`` null or
    absent: reset that partition); errors name ``where`` and the entry's field."""
    if not isinstance(value, list):
        raise InvalidArgumentError.for_field(where, "must be a list")
    offsets = []
    for index, entry in enumerate(value):
        where_entry = f"{where}[{index}]"
        if not isinstance(entry, dict):
            raise InvalidArgumentError.for_field(where_entry, "must be an object")
        offsets.append(
            ConnectorOffset(
                _primitive_map(f"{where_entry}.partition", entry.get("partition")),
                _primitive_map(f"{where_entry}.offset", entry.get("offset")),
            )
        )
    return offsets


def _primitive_map(where: str, value: Any) -> dict[str, OffsetPrimitive] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidArgumentError.for_field(where, "must be an object")
    for key, item in value.items():
        if isinstance(item, (dict, list)):
            raise InvalidArgumentError.for_field(f"{where}.{key}", "must be a primitive value")
    return dict(value)

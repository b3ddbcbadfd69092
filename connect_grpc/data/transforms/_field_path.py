"""Field paths of KIP-821 (``field.syntax.version``): ``V1`` names a top-level field,
``V2`` a dotted path into nested structs or maps, with backticks around a name that holds
dots (Kafka's ``SingleFieldPath``)."""

from __future__ import annotations

from typing import Any

from connect_grpc.data.schema import Field, Schema
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms._support import require_map_or_null, require_struct_or_null
from connect_grpc.kernel.configdef import ConfigKey, ConfigType, Importance, one_of_ignoring_case

FIELD_SYNTAX_VERSION = "field.syntax.version"
_DOC = (
    "Defines the version of the syntax to access fields. If set to `V1`, then the field paths "
    "are limited to access the elements at the root level of the struct or map. If set to "
    "`V2`, the syntax will support accessing nested elements. To access nested elements, "
    "dotted notation is used. If dots are already included in the field name, then backtick "
    "pairs can be used to wrap field names containing dots. E.g. to access the subfield `baz` "
    "from a field named \"foo.bar\" in a struct/map the following format can be used to "
    "access its elements: \"`foo.bar`.baz\"."
)
_NESTED = "nested field access"


def field_syntax_version_key() -> ConfigKey:
    return ConfigKey(FIELD_SYNTAX_VERSION, ConfigType.STRING, _DOC, default="V1",
                     importance=Importance.HIGH, validator=one_of_ignoring_case("V1", "V2"))


class SingleFieldPath:
    """One field path; raises ValueError (Kafka's ConfigException message) for a V2 path
    with an unclosed backtick."""

    def __init__(self, text: str, version: str) -> None:
        self.steps = [text] if version.upper() == "V1" else _steps_v2(text)

    def field_from(self, schema: Schema | None) -> Field | None:
        if schema is None:
            return None
        current = schema
        for step in self.steps[:-1]:
            field = current.field(step)
            if field is None:
                return None
            current = field.schema
        return current.field(self.steps[-1])

    def value_from_struct(self, struct: Struct | None, with_default: bool = True) -> Any:
        current = struct
        for step in self.steps[:-1]:
            if current is None or current.schema.field(step) is None:
                return None
            current = require_struct_or_null(current.get(step), _NESTED)
        if current is None or current.schema.field(self.steps[-1]) is None:
            return None
        last = self.steps[-1]
        return current.get(last) if with_default else current.get_without_default(last)

    def value_from_map(self, value: dict[str, Any] | None) -> Any:
        current = value
        for step in self.steps[:-1]:
            if current is None:
                return None
            current = require_map_or_null(current.get(step), _NESTED)
        return None if current is None else current.get(self.steps[-1])


def _steps_v2(path: str) -> list[str]:
    steps: list[str] = []
    index = 0
    while index < len(path):
        if path[index] != "`":
            dot = path.find(".", index)
            if dot < 0:
                steps.append(path[index:])
                index = len(path)
            else:
                steps.append(path[index:dot])
                index = dot + 1
        else:
            index = _quoted_step(path, index, steps)
    if path.endswith("."):
        steps.append("")
    return steps


def _quoted_step(path: str, backtick_at: int, steps: list[str]) -> int:
    """Reads a backticked step (a backtick is closing when followed by a dot or the end and
    not preceded by a backslash); returns where the next step starts."""
    index = backtick_at + 1
    start = index
    name: list[str] = []
    while True:
        index = path.find("`", index)
        if index < 0:
            _incomplete(path, backtick_at)
        escaped = path[index - 1] == "\\"
        if index >= len(path) - 1:
            if escaped:
                _incomplete(path, backtick_at)
            name.append(path[start:index])
            steps.append("".join(name))
            return index + 1
        if path[index + 1] != ".":
            index += 1
            continue
        if escaped:
            name.append(path[start:index - 1] + "`")
            index += 1
            start = index
            continue
        name.append(path[start:index])
        steps.append("".join(name))
        return index + 2


def _incomplete(path: str, backtick_at: int) -> None:
    raise ValueError(
        f"Incomplete backtick pair in path: [{path}], consider adding a backslash before "
        f"backtick at position {backtick_at} to escape it"
    )

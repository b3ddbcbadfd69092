"""Kafka Connect's Struct: the value of a STRUCT schema, validated as it is filled."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from connect_grpc.data.errors import DataError
from connect_grpc.data.javatext import java_string
from connect_grpc.data.schema import (
    Field,
    Schema,
    Type,
    _register_struct_class,
    validate_value,
)


class Struct:
    """The value of a STRUCT schema: one slot per field, filled with :meth:`put` (which
    validates the value against the field's schema) and checked whole by :meth:`validate`."""

    __slots__ = ("_schema", "_values")

    def __init__(self, schema: Schema) -> None:
        if schema.type is not Type.STRUCT:
            raise DataError(f"Not a struct schema: {schema!r}")
        self._schema = schema
        self._values: list[Any] = [None] * len(schema._fields or ())

    @classmethod
    def trusted(cls, schema: Schema, values: list[Any]) -> Struct:
        """A Struct of values already valid for the schema's fields, in field order (for
        converters that built them from the schema; nothing is checked)."""
        struct = cls.__new__(cls)
        struct._schema = schema
        struct._values = values
        return struct

    @property
    def schema(self) -> Schema:
        return self._schema

    def put(self, field: str | Field, value: Any) -> Struct:
        """Sets a field's value after validating it; returns self for chaining."""
        if isinstance(field, str):
            target = self._schema._fields_by_name.get(field)  # type: ignore[union-attr]
            if target is None:
                raise DataError(f"{field} is not a valid field name")
        elif field is None:
            raise DataError("field cannot be null.")
        else:
            target = field
        validate_value(target.schema, value, target.name)
        self._values[target.index] = value
        return self

    def get(self, field: str | Field) -> Any:
        """The field's value, or the field schema's default when the value is None."""
        target = self._lookup(field) if isinstance(field, str) else field
        value = self._values[target.index]
        if value is None:
            return target.schema.default
        return value

    def get_without_default(self, field: str | Field) -> Any:
        """The field's value as put, None included."""
        target = self._lookup(field) if isinstance(field, str) else field
        return self._values[target.index]

    def validate(self) -> None:
        """Raises DataError if a required field without default is unset or a value does not
        fit its field's schema."""
        for field in self._schema.fields:
            value = self._values[field.index]
            if value is None and (field.schema.optional or field.schema.default is not None):
                continue
            validate_value(field.schema, value, field.name)

    def _lookup(self, name: str) -> Field:
        field = self._schema.field(name)
        if field is None:
            raise DataError(f"{name} is not a valid field name")
        return field

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Struct):
            return NotImplemented
        return self._schema == other._schema and self._values == other._values

    def __hash__(self) -> int:
        return hash((self._schema, tuple(_hashable(value) for value in self._values)))

    def __repr__(self) -> str:
        return struct_text(self)


# Schema validation checks a STRUCT value's class; schema.py cannot import this module (this
# module builds on it), so it learns the class here, before any Struct can exist.
_register_struct_class(Struct)


def struct_text(struct: Struct) -> str:
    """``repr(struct)``: Kafka's ``Struct.toString``, e.g. ``Struct{a=1,b=x}``."""
    return _text_function(struct._schema)(struct._values)


def value_texts(values: Iterable[Any], other_text: Callable[[Any], str]) -> list[str]:
    """Each value's text: a Struct's as ``struct_text`` writes it, any other value's by
    ``other_text``. A sink writing a batch of Structs (FileStreamSink) looks its schema's
    text function up once per run of values of the very same schema object, not once per
    value: an equal schema that is another object would be compared field by field."""
    texts: list[str] = []
    append = texts.append
    last_schema: Schema | None = None
    text_of = other_text
    for value in values:
        if value.__class__ is Struct:
            schema = value._schema
            if schema is not last_schema:
                last_schema, text_of = schema, _text_function(schema)
            append(text_of(value._values))
        else:
            append(other_text(value))
    return texts


#: Per struct schema, the function that writes a Struct of it as ``repr`` does (Kafka's
#: ``Struct.toString``), generated once per schema: a sink printing Structs
#: (FileStreamSink) writes one per record.
_TEXT_FUNCTIONS: dict[Schema, Callable[[list[Any]], str]] = {}
_TEXT_FUNCTIONS_MAX = 256


def _text_function(schema: Schema) -> Callable[[list[Any]], str]:
    function = _TEXT_FUNCTIONS.get(schema)
    if function is None:
        function = _new_text_function(schema)
        if len(_TEXT_FUNCTIONS) >= _TEXT_FUNCTIONS_MAX:
            _TEXT_FUNCTIONS.clear()  # a stream of ever-new schemas: start afresh
        _TEXT_FUNCTIONS[schema] = function
    return function


def _new_text_function(schema: Schema) -> Callable[[list[Any]], str]:
    """``name=value`` of each field whose value is not null, in field order, each value as
    Java's ``String.valueOf`` writes it; when every value is a str, one concatenation
    generated for the schema (only generated names enter its source)."""
    prefixes = [(field.index, field.name + "=") for field in schema.fields]

    def any_values(values: list[Any]) -> str:
        parts = [
            prefix + (value if value.__class__ is str else java_string(value))
            for index, prefix in prefixes
            if (value := values[index]) is not None
        ]
        return "Struct{" + ",".join(parts) + "}"

    if not prefixes:
        return any_values
    namespace: dict[str, Any] = {"any_values": any_values}
    names, concatenated = [], []
    for number, (_, prefix) in enumerate(prefixes):
        namespace[f"p{number}"] = ("Struct{" if number == 0 else ",") + prefix
        names.append(f"x{number}")
        concatenated.append(f"p{number} + x{number}")
    source = (
        "def struct_text(values):\n"
        f"    {', '.join(names)}, = values\n"
        f"    if {' and '.join(f'{name}.__class__ is str' for name in names)}:\n"
        f"        return {' + '.join(concatenated)} + '}}'\n"
        "    return any_values(values)\n"
    )
    exec(compile(source, "<struct text>", "exec"), namespace)
    function: Callable[[list[Any]], str] = namespace["struct_text"]
    return function


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    if isinstance(value, dict):
        return frozenset((_hashable(k), _hashable(v)) for k, v in value.items())
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value

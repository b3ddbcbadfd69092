"""Connect schemas (Kafka Connect's Schema, ConnectSchema, SchemaBuilder and Field).

A :class:`Schema` is immutable and hashable; two schemas are equal when every attribute is
(Kafka's ``ConnectSchema.equals``). Schemas are made with :class:`SchemaBuilder`, whose
instances are builders, not schemas: call ``.build()``.

Python values per type: INT8/16/32/64 → ``int`` (not ``bool``, range-checked), FLOAT32/64 →
``float``, BOOLEAN → ``bool``, STRING → ``str``, BYTES → ``bytes`` (``bytearray`` and
``memoryview`` accepted), ARRAY → ``list``, MAP → ``dict``, STRUCT →
:class:`~connect_grpc.data.struct.Struct`. The logical types (:mod:`connect_grpc.data.logical`)
take ``decimal.Decimal``, ``datetime.date``, ``datetime.time`` and ``datetime.datetime``.
"""

from __future__ import annotations

import builtins
import datetime
import decimal
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from connect_grpc.data.errors import DataError, SchemaBuilderError

if TYPE_CHECKING:
    from collections.abc import Iterable


class Type(enum.Enum):
    """A schema's type; the value is Kafka's lower-case name, ``str()`` the upper-case one
    (as Kafka's messages print it)."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        return self not in _COMPOUND_TYPES

    def __str__(self) -> str:
        return self.name


_COMPOUND_TYPES = frozenset({Type.ARRAY, Type.MAP, Type.STRUCT})

_FAST_CLASSES: dict[Type, type] = {
    Type.INT8: int, Type.INT16: int, Type.INT32: int, Type.INT64: int,
    Type.FLOAT32: float, Type.FLOAT64: float, Type.BOOLEAN: bool, Type.STRING: str,
    Type.BYTES: bytes,
}

_INT_RANGES: dict[Type, tuple[int, int]] = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}


DECIMAL_LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
DATE_LOGICAL_NAME = "org.apache.kafka.connect.data.Date"
TIME_LOGICAL_NAME = "org.apache.kafka.connect.data.Time"
TIMESTAMP_LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"

_LOGICAL_CLASSES: dict[str, tuple[type, ...]] = {
    DECIMAL_LOGICAL_NAME: (decimal.Decimal,),
    DATE_LOGICAL_NAME: (datetime.date,),
    TIME_LOGICAL_NAME: (datetime.time,),
    TIMESTAMP_LOGICAL_NAME: (datetime.datetime,),
}



@dataclass(frozen=True, slots=True)
class Field:
    """A struct field: its name, its position in the struct and its schema."""

    name: str
    index: int
    schema: Schema

    def __repr__(self) -> str:
        return f"Field{{name={self.name}, index={self.index}, schema={self.schema!r}}}"


class Schema:
    """An immutable Connect schema (Kafka's ConnectSchema). Build one with SchemaBuilder."""

    __slots__ = (
        "_fast_class",
        "_fields",
        "_fields_by_name",
        "_hash",
        "_int_range",
        "_key_schema",
        "_value_schema",
        "default",
        "doc",
        "name",
        "optional",
        "parameters",
        "type",
        "version",
    )

    type: Type
    optional: bool
    default: Any
    name: str | None
    version: int | None
    doc: str | None
    parameters: dict[str, str] | None
    _fields: tuple[Field, ...] | None
    _fields_by_name: dict[str, Field] | None
    _key_schema: Schema | None
    _value_schema: Schema | None
    _hash: int
    #: The one Python class whose values need no check beyond the class (and, for integers,
    #: the range in _int_range): what makes Struct.put cheap for plain fields.
    _fast_class: builtins.type | None
    _int_range: tuple[int, int] | None

    def __init__(
        self,
        type: Type,
        optional: bool = False,
        default: Any = None,
        name: str | None = None,
        version: int | None = None,
        doc: str | None = None,
        parameters: Mapping[str, str] | None = None,
        fields: Iterable[Field] | None = None,
        key_schema: Schema | None = None,
        value_schema: Schema | None = None,
    ) -> None:
        init = object.__setattr__
        init(self, "type", type)
        init(self, "optional", optional)
        init(self, "default", default)
        init(self, "name", name)
        init(self, "version", version)
        init(self, "doc", doc)
        init(self, "parameters", dict(parameters) if parameters is not None else None)
        if type is Type.STRUCT:
            field_tuple = tuple(fields or ())
            init(self, "_fields", field_tuple)
            init(self, "_fields_by_name", {f.name: f for f in field_tuple})
        else:
            init(self, "_fields", None)
            init(self, "_fields_by_name", None)
        init(self, "_key_schema", key_schema)
        init(self, "_value_schema", value_schema)
        plain = name is None or name not in _LOGICAL_CLASSES
        init(self, "_fast_class", _FAST_CLASSES.get(type) if plain else None)
        init(self, "_int_range", _INT_RANGES.get(type) if plain else None)
        init(self, "_hash", hash((
            type, optional, name, version, doc,
            tuple(sorted(parameters.items())) if parameters else None,
            self._fields, key_schema, value_schema,
        )))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Schema is immutable: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Schema is immutable: cannot delete {name}")

    @property
    def fields(self) -> list[Field]:
        if self._fields is None:
            raise DataError("Cannot list fields on non-struct type")
        return list(self._fields)

    def field(self, name: str) -> Field | None:
        if self._fields_by_name is None:
            raise DataError("Cannot look up fields on non-struct type")
        return self._fields_by_name.get(name)

    @property
    def key_schema(self) -> Schema | None:
        if self.type is not Type.MAP:
            raise DataError("Cannot look up key schema on non-map type")
        return self._key_schema

    @property
    def value_schema(self) -> Schema | None:
        if self.type is not Type.MAP and self.type is not Type.ARRAY:
            raise DataError("Cannot look up value schema on non-array and non-map type")
        return self._value_schema

    def validate_value(self, value: Any) -> None:
        validate_value(self, value)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Schema):
            return NotImplemented
        return (
            self._hash == other._hash
            and self.type is other.type
            and self.optional == other.optional
            and self.version == other.version
            and self.name == other.name
            and self.doc == other.doc
            and _same_value(self.default, other.default)
            and self._fields == other._fields
            and self._key_schema == other._key_schema
            and self._value_schema == other._value_schema
            and self.parameters == other.parameters
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        if self.name is not None:
            return f"Schema{{{self.name}:{self.type}}}"
        return f"Schema{{{self.type}}}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Schema, (
            self.type, self.optional, self.default, self.name, self.version, self.doc,
            self.parameters, self._fields, self._key_schema, self._value_schema,
        ))


def _same_value(left: Any, right: Any) -> bool:
    # bool == int in Python (True == 1); Kafka's deepEquals tells Boolean from Integer.
    return (type(left) is type(right) and left == right) or (left is None and right is None)


INT8_SCHEMA = Schema(Type.INT8)
INT16_SCHEMA = Schema(Type.INT16)
INT32_SCHEMA = Schema(Type.INT32)
INT64_SCHEMA = Schema(Type.INT64)
FLOAT32_SCHEMA = Schema(Type.FLOAT32)
FLOAT64_SCHEMA = Schema(Type.FLOAT64)
BOOLEAN_SCHEMA = Schema(Type.BOOLEAN)
STRING_SCHEMA = Schema(Type.STRING)
BYTES_SCHEMA = Schema(Type.BYTES)

OPTIONAL_INT8_SCHEMA = Schema(Type.INT8, optional=True)
OPTIONAL_INT16_SCHEMA = Schema(Type.INT16, optional=True)
OPTIONAL_INT32_SCHEMA = Schema(Type.INT32, optional=True)
OPTIONAL_INT64_SCHEMA = Schema(Type.INT64, optional=True)
OPTIONAL_FLOAT32_SCHEMA = Schema(Type.FLOAT32, optional=True)
OPTIONAL_FLOAT64_SCHEMA = Schema(Type.FLOAT64, optional=True)
OPTIONAL_BOOLEAN_SCHEMA = Schema(Type.BOOLEAN, optional=True)
OPTIONAL_STRING_SCHEMA = Schema(Type.STRING, optional=True)
OPTIONAL_BYTES_SCHEMA = Schema(Type.BYTES, optional=True)


# --- validation (Kafka's ConnectSchema.validateValue) ---------------------------------------

#: The Python classes of each type's values. STRUCT's class, Struct, is defined on top of this
#: module (:mod:`connect_grpc.data.struct`), which registers it when it is imported: until then
#: no Struct exists, so no value is one.
_TYPE_CLASSES: dict[Type, tuple[type, ...]] = {
    Type.INT8: (int,), Type.INT16: (int,), Type.INT32: (int,), Type.INT64: (int,),
    Type.FLOAT32: (float,), Type.FLOAT64: (float,),
    Type.BOOLEAN: (bool,), Type.STRING: (str,),
    Type.BYTES: (bytes, bytearray, memoryview),
    Type.ARRAY: (list,), Type.MAP: (dict,), Type.STRUCT: (),
}


def _register_struct_class(struct_class: type) -> None:
    """Called once by :mod:`connect_grpc.data.struct`: STRUCT values are its Structs."""
    _TYPE_CLASSES[Type.STRUCT] = (struct_class,)


def python_class_name(value: Any) -> str:
    """How messages name a value's class (Kafka prints ``class java.lang.Long``)."""
    cls = type(value)
    if cls.__module__ == "builtins":
        return f"class {cls.__qualname__}"
    return f"class {cls.__module__}.{cls.__qualname__}"


def validate_value(schema: Schema, value: Any, field_name: str | None = None) -> None:
    """Raises DataError (with Kafka's message) unless ``value`` fits ``schema``."""
    if type(value) is schema._fast_class:
        bounds = schema._int_range
        if bounds is None or bounds[0] <= cast(int, value) <= bounds[1]:
            return
    _validate(schema, value, "value" if field_name is None else f'field: "{field_name}"')


def _validate(schema: Schema, value: Any, location: str) -> None:
    if value is None:
        if not schema.optional:
            raise DataError(
                f"Invalid value: null used for required {location}, schema type: {schema.type}"
            )
        return
    if not _has_expected_class(schema, value):
        raise DataError(_invalid_object_message(schema, value, location))
    kind = schema.type
    if kind in _INT_RANGES and type(value) is int:
        low, high = _INT_RANGES[kind]
        if not low <= value <= high:
            raise DataError(
                f"Invalid value {value} for schema with type {kind}: out of range"
                f" [{low}, {high}] for {location}"
            )
    elif kind is Type.STRUCT:
        if value.schema != schema:
            raise DataError("Struct schemas do not match.")
        value.validate()
    elif kind is Type.ARRAY:
        element_location = f"element of array {location}"
        element_schema = _schema_not_none(schema._value_schema, element_location)
        for element in value:
            _validate(element_schema, element, element_location)
    elif kind is Type.MAP:
        key_location = f"key of map {location}"
        value_location = f"value of map {location}"
        key_schema = _schema_not_none(schema._key_schema, key_location)
        value_schema = _schema_not_none(schema._value_schema, value_location)
        for key, entry in value.items():
            _validate(key_schema, key, key_location)
            _validate(value_schema, entry, value_location)


def _has_expected_class(schema: Schema, value: Any) -> bool:
    if schema.name is not None:
        logical = _LOGICAL_CLASSES.get(schema.name)
        if logical is not None:
            return isinstance(value, logical)
    if isinstance(value, bool) and schema.type is not Type.BOOLEAN:
        return False
    return isinstance(value, _TYPE_CLASSES[schema.type])


def _invalid_object_message(schema: Schema, value: Any, location: str) -> str:
    named = f' "{schema.name}"' if schema.name is not None else ""
    return (
        f"Invalid Java object for schema{named} with type {schema.type}: "
        f"{python_class_name(value)} for {location}"
    )


def _schema_not_none(schema: Schema | None, location: str) -> Schema:
    if schema is None:
        raise DataError(f"No schema defined for {location}")
    return schema


# --- SchemaBuilder -----------------------------------------------------------------------

_UNSET: Any = object()


class SchemaBuilder:
    """Builds a :class:`Schema` fluently, with Kafka's SchemaBuilder rules: each attribute
    can be set once (setting it again to a different value raises SchemaBuilderError), a
    default must be valid for the schema built so far, field names are unique."""

    __slots__ = (
        "_default", "_doc", "_fields", "_key_schema", "_name", "_optional", "_parameters",
        "_type", "_value_schema", "_version",
    )

    def __init__(self, type: Type) -> None:
        if type is None:
            raise SchemaBuilderError("type cannot be null")
        self._type = type
        self._optional: builtins.bool | None = None
        self._default: Any = _UNSET
        self._name: str | None = None
        self._version: int | None = None
        self._doc: str | None = None
        self._parameters: dict[str, str] | None = None
        self._fields: dict[str, Field] | None = {} if type is Type.STRUCT else None
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None

    # -- factories --
    @classmethod
    def type(cls, type: Type) -> SchemaBuilder:
        return cls(type)

    @classmethod
    def int8(cls) -> SchemaBuilder:
        return cls(Type.INT8)

    @classmethod
    def int16(cls) -> SchemaBuilder:
        return cls(Type.INT16)

    @classmethod
    def int32(cls) -> SchemaBuilder:
        return cls(Type.INT32)

    @classmethod
    def int64(cls) -> SchemaBuilder:
        return cls(Type.INT64)

    @classmethod
    def float32(cls) -> SchemaBuilder:
        return cls(Type.FLOAT32)

    @classmethod
    def float64(cls) -> SchemaBuilder:
        return cls(Type.FLOAT64)

    @classmethod
    def bool(cls) -> SchemaBuilder:
        return cls(Type.BOOLEAN)

    @classmethod
    def string(cls) -> SchemaBuilder:
        return cls(Type.STRING)

    @classmethod
    def bytes(cls) -> SchemaBuilder:
        return cls(Type.BYTES)

    @classmethod
    def struct(cls) -> SchemaBuilder:
        return cls(Type.STRUCT)

    @classmethod
    def array(cls, value_schema: Schema) -> SchemaBuilder:
        if value_schema is None:
            raise SchemaBuilderError("valueSchema cannot be null.")
        builder = cls(Type.ARRAY)
        builder._value_schema = _as_schema(value_schema)
        return builder

    @classmethod
    def map(cls, key_schema: Schema, value_schema: Schema) -> SchemaBuilder:
        if key_schema is None:
            raise SchemaBuilderError("keySchema cannot be null.")
        if value_schema is None:
            raise SchemaBuilderError("valueSchema cannot be null.")
        builder = cls(Type.MAP)
        builder._key_schema = _as_schema(key_schema)
        builder._value_schema = _as_schema(value_schema)
        return builder

    # -- what has been set so far --
    @property
    def schema_type(self) -> Type:
        return self._type

    @property
    def is_optional(self) -> builtins.bool:
        return builtins.bool(self._optional)

    # -- fluent setters --
    def optional(self) -> SchemaBuilder:
        _check_can_set("optional", self._optional, True)
        self._optional = True
        return self

    def required(self) -> SchemaBuilder:
        _check_can_set("optional", self._optional, False)
        self._optional = False
        return self

    def default_value(self, value: Any) -> SchemaBuilder:
        if self._default is not _UNSET and self._default is not None:
            _check_can_set("default", self._default, value)
        try:
            validate_value(self.build(), value)
        except DataError as exc:
            raise SchemaBuilderError(f"Invalid default value: {exc}") from exc
        self._default = value
        return self

    def name(self, name: str | None) -> SchemaBuilder:
        _check_can_set("name", self._name, name)
        self._name = name
        return self

    def version(self, version: int | None) -> SchemaBuilder:
        _check_can_set("version", self._version, version)
        self._version = version
        return self

    def doc(self, doc: str | None) -> SchemaBuilder:
        _check_can_set("doc", self._doc, doc)
        self._doc = doc
        return self

    def parameter(self, key: str, value: str) -> SchemaBuilder:
        if self._parameters is None:
            self._parameters = {}
        self._parameters[key] = value
        return self

    def parameters(self, parameters: Mapping[str, str]) -> SchemaBuilder:
        if not parameters:
            return self
        if self._parameters is None:
            self._parameters = {}
        self._parameters.update(parameters)
        return self

    def field(self, name: str, schema: Schema) -> SchemaBuilder:
        if self._fields is None:
            raise SchemaBuilderError(f"Cannot create fields on type {self._type}")
        if not name:
            raise SchemaBuilderError("fieldName cannot be null.")
        if schema is None:
            raise SchemaBuilderError(f"fieldSchema for field {name} cannot be null.")
        if name in self._fields:
            raise SchemaBuilderError(
                f"Cannot create field because of field name duplication {name}"
            )
        self._fields[name] = Field(name, len(self._fields), _as_schema(schema))
        return self

    def build(self) -> Schema:
        return Schema(
            self._type,
            optional=builtins.bool(self._optional),
            default=None if self._default is _UNSET else self._default,
            name=self._name,
            version=self._version,
            doc=self._doc,
            parameters=self._parameters,
            fields=self._fields.values() if self._fields is not None else None,
            key_schema=self._key_schema,
            value_schema=self._value_schema,
        )

    def __repr__(self) -> str:
        return f"SchemaBuilder{{{self._type}}}"


def _as_schema(schema: Schema | SchemaBuilder) -> Schema:
    # Kafka lets a SchemaBuilder stand for a Schema; ours are separate types, so a builder
    # passed where a schema belongs is built rather than rejected.
    return schema.build() if isinstance(schema, SchemaBuilder) else schema


def _check_can_set(attribute: str, current: Any, new: Any) -> None:
    if current is not None and current != new:
        raise SchemaBuilderError(
            f"Invalid SchemaBuilder call: {attribute} has already been set."
        )

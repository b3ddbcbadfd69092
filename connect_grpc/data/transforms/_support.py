"""What the built-in transformations share: Kafka Connect's ``Requirements`` checks,
``SchemaUtil.copySchemaBasics``, the per-schema update cache, the key/value side a
``$Key``/``$Value`` variant works on, and the config helpers.

Where Kafka's messages name a Java class (``found: java.lang.String``), ours name the
Python type (``found: str``): a Python value has no Java class, and an int has no width.
"""

from __future__ import annotations

import abc
import datetime as dt
import decimal
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from connect_grpc.data.errors import DataError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import Transformation
from connect_grpc.data.record import ConnectRecord
from connect_grpc.data.schema import Schema, SchemaBuilder, Type, validate_value
from connect_grpc.data.struct import Struct

#: How many input schemas a schema-updating SMT remembers (Kafka: an LRU cache of 16).
SCHEMA_CACHE_SIZE = 16

K = TypeVar("K")
V = TypeVar("V")


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def require_map(value: Any, purpose: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataError(
            f"Only Map objects supported in absence of schema for [{purpose}], found: "
            f"{type_name(value)}"
        )
    return value


def require_map_or_null(value: Any, purpose: str) -> dict[str, Any] | None:
    return None if value is None else require_map(value, purpose)


def require_struct(value: Any, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {type_name(value)}")
    return value


def require_struct_or_null(value: Any, purpose: str) -> Struct | None:
    return None if value is None else require_struct(value, purpose)


def require_schema(schema: Schema | None, purpose: str) -> Schema:
    if schema is None:
        raise DataError(f"Schema required for [{purpose}]")
    return schema


def require_sink_record(record: ConnectRecord, purpose: str) -> None:
    # A SinkRecord is the record that knows its Kafka offset (data/ must not import connectors/).
    if not hasattr(record, "kafka_offset"):
        raise DataError(
            f"Only SinkRecord supported for [{purpose}], found: {type(record).__name__}"
        )


def copy_schema_basics(source: Schema, builder: SchemaBuilder | None = None) -> SchemaBuilder:
    """A builder of ``source``'s type (an array keeps its element schema) carrying its
    name, version, doc and parameters; not its optionality, default or fields."""
    if builder is None:
        builder = _builder_of_type(source)
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters:
        builder.parameters(dict(source.parameters))
    return builder


def _builder_of_type(source: Schema) -> SchemaBuilder:
    if source.type is Type.ARRAY:
        return SchemaBuilder.array(_present(source.value_schema))
    if source.type is Type.MAP:
        return SchemaBuilder.map(_present(source.key_schema), _present(source.value_schema))
    return SchemaBuilder.type(source.type)


def _present(schema: Schema | None) -> Schema:
    if schema is None:
        raise DataError("A container schema has no element schema")
    return schema


def field_values(struct: Struct, with_default: bool) -> list[Any]:
    """All of the struct's values in field order, as ``struct_value`` reads each one."""
    values = list(struct._values)  # the values read, copied (no accessor for all)
    if with_default and None in values:
        for field in struct.schema.fields:
            if values[field.index] is None:
                values[field.index] = field.schema.default
    return values


def struct_of_checked_values(schema: Schema, values: list[Any],
                             copied: int | None = None) -> Struct:
    """A Struct of ``schema`` holding ``values`` (one per field, in order) without checking
    each against its field schema again, as ``put`` would: each of the first ``copied``
    values (all by default) comes from a field of the same schema in a Struct, which checked
    it when it was put, and the caller vouches for the others. A null among the copied
    values in a required field is still refused with ``put``'s message. This per-record
    shortcut is what makes a chain of schema'd SMTs affordable. ``values`` is taken over."""
    if None in values and None in values[:copied]:
        for field in schema.fields[:copied]:
            if values[field.index] is None and not field.schema.optional:
                validate_value(field.schema, None, field.name)
    struct = Struct.__new__(Struct)
    struct._schema = schema  # checked values, see the docstring
    struct._values = values
    return struct


def struct_value(struct: Struct, name: str, with_default: bool) -> Any:
    """A field's value, its default standing in for null unless ``with_default`` is off."""
    return struct.get(name) if with_default else struct.get_without_default(name)


class SchemaCache(Generic[K, V]):
    """A small LRU map from an input schema to what an SMT derived from it, safe to share
    between the threads that apply one transformation (Kafka's ``SynchronizedCache``)."""

    def __init__(self, size: int = SCHEMA_CACHE_SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        # The last hit, read without the lock: a stream mostly repeats one schema object.
        self._last: tuple[K, V] | None = None

    def get(self, key: K) -> V | None:
        last = self._last
        if last is not None and last[0] is key:
            return last[1]
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self._last = (key, found)
            return found

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._last = (key, value)
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._last = None
            self._entries.clear()


class Side:
    """Which half of a record a ``$Key``/``$Value`` variant operates on."""

    def __init__(self, is_key: bool) -> None:
        self.is_key = is_key

    def schema(self, record: ConnectRecord) -> Schema | None:
        return record.key_schema if self.is_key else record.value_schema

    def value(self, record: ConnectRecord) -> Any:
        return record.key if self.is_key else record.value

    def updated(self, record: Any, schema: Schema | None, value: Any) -> Any:
        """The record with this side's schema and value replaced (headers and the rest kept)."""
        if self.is_key:
            return record.new_record(key_schema=schema, key=value)
        return record.new_record(value_schema=schema, value=value)


KEY = Side(is_key=True)
VALUE = Side(is_key=False)


def connect_headers(record: ConnectRecord) -> ConnectHeaders:
    """A fresh, changeable copy of the record's headers as ConnectHeaders (raw pairs are
    read as bytes values with no schema)."""
    headers = record.headers
    if isinstance(headers, ConnectHeaders):
        return headers.duplicate()
    return ConnectHeaders.from_raw(headers)


class KeyOrValueTransformation(Transformation[Any]):
    """A transformation with ``$Key`` and ``$Value`` variants: the subclass ``...Key``
    operates on the record's key and key schema, ``...Value`` on its value and value schema."""

    side: ClassVar[Side] = VALUE


#: A SideTransformation's function for the values of one schema (``compile_side``).
SideStep = Callable[[Any, Any], Any]


class NotCompiled(Exception):
    """A compiled step met a value it leaves to ``apply_side``."""


def struct_values_of(value: Any, schema: Schema) -> list[Any]:
    """The values of ``value``, a Struct of exactly ``schema`` with no null value, for a
    compiled step; else NotCompiled."""
    if value.__class__ is not Struct or value._schema is not schema:
        raise NotCompiled
    values: list[Any] = value._values
    if None in values:
        raise NotCompiled
    return values


#: The classes of values that records may share (the same object in each record).
IMMUTABLE_CLASSES = frozenset({
    type(None), bool, int, float, str, bytes, decimal.Decimal, dt.datetime, dt.date, dt.time,
})


@dataclass(frozen=True, slots=True)
class FromField:
    """A field of the output Struct taken from the input's field ``index``, through each of
    ``functions`` in turn (none: as it is). A function gets a value that is not null and
    returns one that is not null, or raises (then ``apply_side`` decides)."""

    index: int
    functions: tuple[Callable[[Any], Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Fixed:
    """A field of the output Struct that is the same value, not null and immutable, in every
    record."""

    value: Any


#: Where each field of a SideTransformation's output Struct comes from (``compile_plan``).
FieldPlan = tuple[FromField | Fixed, ...]


def then_plan(first: FieldPlan, second: FieldPlan) -> FieldPlan | None:
    """The plan of ``second`` applied to what ``first`` gives, worked out once: a function
    of a fixed value is called now. None when such a call raises or gives a value that is
    null or that records may not share, or when ``second`` does not read a field that
    ``first`` makes through functions: those may raise (MaskField refuses a value it cannot
    mask), and the record must fail at the first stage, as its ``apply`` would make it,
    before the second stage drops the field. The plans then run one after the other."""
    read = {source.index for source in second if source.__class__ is FromField}
    for index, base in enumerate(first):
        if index not in read and isinstance(base, FromField) and base.functions:
            return None
    composed: list[FromField | Fixed] = []
    for source in second:
        if source.__class__ is Fixed:
            composed.append(source)
            continue
        assert isinstance(source, FromField)
        base = first[source.index]
        if isinstance(base, FromField):
            composed.append(FromField(base.index, base.functions + source.functions))
            continue
        value = base.value
        try:
            for function in source.functions:
                value = function(value)
        except Exception:
            return None
        if value is None or value.__class__ not in IMMUTABLE_CLASSES:
            return None
        composed.append(Fixed(value))
    return tuple(composed)


def plan_step(schema: Schema, output: Schema, plan: Sequence[FromField | Fixed]) -> SideStep:
    """The compiled step of a plan: a function generated for it that checks the value is a
    Struct of exactly ``schema`` with no null (else NotCompiled) and makes the output Struct
    of ``output`` in one list expression, without checking the values again (each comes
    from the input Struct, which checked it when it was put, or from the plan)."""
    namespace: dict[str, Any] = {
        "Struct": Struct, "new": Struct.__new__, "NotCompiled": NotCompiled, "schema": schema,
        "output": output,
    }
    items = []
    for number, source in enumerate(plan):
        if isinstance(source, Fixed):
            namespace[f"c{number}"] = source.value
            items.append(f"c{number}")
            continue
        expression = f"v[{source.index}]"
        for depth, function in enumerate(source.functions):
            namespace[f"f{number}_{depth}"] = function
            expression = f"f{number}_{depth}({expression})"
        items.append(expression)
    # Only indexes and generated names enter the source.
    text = (
        "def plan_step(record, value):\n"
        "    if value.__class__ is not Struct or value._schema is not schema:\n"
        "        raise NotCompiled\n"
        "    v = value._values\n"
        "    if None in v:\n"
        "        raise NotCompiled\n"
        "    struct = new(Struct)\n"
        "    struct._schema = output\n"
        f"    struct._values = [{', '.join(items)}]\n"
        "    return struct\n"
    )
    exec(compile(text, "<field plan>", "exec"), namespace)
    step: SideStep = namespace["plan_step"]
    return step


#: A chain compiled for one input schema: the schema it gives and its steps in turn.
CompiledChain = tuple[Schema, list[SideStep]]


def compile_chain(
    transformations: Sequence[SideTransformation], schema: Schema | None
) -> CompiledChain | None:
    """The steps of a chain of SideTransformations of one side for values of ``schema``:
    the plans of consecutive stages composed into one step where they compose
    (``then_plan``: no Struct made between them), a new step begun where they do not, each
    other stage's ``compile_side``. None when a stage has neither for its input, or when
    compiling raises: a stage that refuses the schema itself (InsertField adding a field
    the schema has, a SchemaBuilder error) refuses it in ``apply_side`` too, but only for
    values it does not pass on unchanged (a null): each stage's ``apply_side``, through
    error handling, then decides for each record, as each stage's ``apply`` would."""
    if schema is None:
        return None
    try:
        return _compiled_steps(transformations, schema)
    except Exception:
        return None


def _compiled_steps(
    transformations: Sequence[SideTransformation], schema: Schema
) -> CompiledChain | None:
    steps: list[SideStep] = []
    planned: tuple[Schema, Schema, FieldPlan] | None = None  # (input schema, output, plan)
    for transformation in transformations:
        stage_plan = transformation.compile_plan(schema)
        if stage_plan is not None:
            output, plan = stage_plan
            composed = None if planned is None else then_plan(planned[2], plan)
            if composed is not None:
                assert planned is not None
                planned = (planned[0], output, composed)
            else:
                if planned is not None:
                    steps.append(plan_step(*planned))
                planned = (schema, output, plan)
            schema = output
            continue
        if planned is not None:
            steps.append(plan_step(*planned))
            planned = None
        compiled = transformation.compile_side(schema)
        if compiled is None:
            return None
        schema, step = compiled
        steps.append(step)
    if planned is not None:
        steps.append(plan_step(*planned))
    return schema, steps


class SideTransformation(KeyOrValueTransformation):
    """A ``$Key``/``$Value`` transformation that reads and changes only its side's schema
    and value (the rest of the record only read): ``apply_side`` is the whole of it, so a
    chain of them on one side may run on (schema, value) pairs and make one record at the
    end (the task pipeline does), which is what ``apply`` would have made step by step."""

    @abc.abstractmethod
    def apply_side(self, record: Any, schema: Schema | None, value: Any) -> tuple[Any, Any]:
        """(schema, value) of the side after the transformation; the very same pair when
        the record passes unchanged. ``record`` gives the other fields (topic, partition,
        offset, timestamp); its own schema and value on this side are not read."""

    def compile_side(self, schema: Schema) -> tuple[Schema, SideStep] | None:
        """For values of ``schema``: the schema ``apply_side`` gives them and a function
        (record, value) → value that gives what ``apply_side`` gives whenever it does not
        raise (it raises ``NotCompiled`` for any value it is not sure of, a null among a
        Struct's values or a Struct of another schema: then ``apply_side`` decides). None
        when there is none for this schema. The default: ``compile_plan``'s step."""
        planned = self.compile_plan(schema)
        if planned is None:
            return None
        output, plan = planned
        return output, plan_step(schema, output, plan)

    def compile_plan(self, schema: Schema) -> tuple[Schema, FieldPlan] | None:
        """For Struct values of ``schema`` with no null value: the schema ``apply_side``
        gives them and where each field of the Struct it gives comes from, when that depends
        on nothing else of the record. Plans of a chain's stages compose (``then_plan``)
        into one step for the whole chain. None when there is none (the default)."""
        return None

    def apply(self, record: Any) -> Any:
        side = self.side
        schema, value = side.schema(record), side.value(record)
        new_schema, new_value = self.apply_side(record, schema, value)
        if new_value is value and new_schema is schema:
            return record
        return side.updated(record, new_schema, new_value)

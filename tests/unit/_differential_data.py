"""Random Connect data for the pipeline's differential test (``test_pipeline_differential``):
hypothesis strategies of schemas (nested structs, arrays, maps, every primitive and logical
type, optional or not, with defaults, names, versions, docs and parameters), of values that
conform to them (nulls here and there), and of the records that carry them.

Field and header names come from small pools, so that the SMTs' configs
(``_differential_cases``) name fields and headers the records have (and, now and then, ones
they lack, or that clash). Making a strategy costs more than drawing from it: strategies
are made once (module constants) or once per schema object (``per_schema_object``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis import strategies as st

from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.logical import Date, Decimal, Time, Timestamp
from connect_grpc.data.schema import Schema, SchemaBuilder, Type
from connect_grpc.data.struct import Struct

FIELD_NAMES = ("a", "b", "c", "d")
#: Field names the SMTs' configs use: the pool, and one no schema has.
CONFIG_FIELDS = (*FIELD_NAMES, "x")
HEADER_NAMES = ("h1", "h2", "a")
TOPICS = ("orders", "orders.eu", "audit")
#: The characters of random text (an explicit alphabet: no Unicode tables to build).
_TEXT = "ab1-. é\"\\"

_INTEGERS = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
_PRIMITIVES = (
    Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64, Type.BOOLEAN,
    Type.STRING, Type.BYTES,
)
_LOGICAL = ("Decimal", "Date", "Time", "Timestamp")


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, each ``weight`` times as likely as a strategy of weight 1
    (``one_of`` counts a strategy given twice once)."""
    pool = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.sampled_from(range(len(pool))).flatmap(pool.__getitem__)


# ---- values ---------------------------------------------------------------------------------

_T = TypeVar("_T")


def per_schema_object(
    make: Callable[[Any], st.SearchStrategy[_T]],
) -> Callable[[Any], st.SearchStrategy[_T]]:
    """``make`` once per schema object (making strategies is what costs most). By object,
    not by equality: a Struct made for one schema and put in a record of another, equal,
    schema object is not what a compiled chain takes (it checks the very object)."""
    made: dict[int, tuple[Any, st.SearchStrategy[_T]]] = {}

    @functools.wraps(make)
    def cached(schema: Any) -> st.SearchStrategy[_T]:
        entry = made.get(id(schema))
        if entry is None or entry[0] is not schema:
            if len(made) > 4096:
                made.clear()
            entry = made[id(schema)] = (schema, make(schema))
        return entry[1]

    return cached



def _float32s() -> st.SearchStrategy[float]:
    return st.floats(width=32, allow_nan=False, allow_infinity=False)


def _datetimes() -> st.SearchStrategy[dt.datetime]:
    # whole milliseconds: what a Timestamp holds
    return st.integers(-10**12, 4 * 10**12).map(
        lambda ms: dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms))


def _dates() -> st.SearchStrategy[dt.date]:
    return st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1))


def _times() -> st.SearchStrategy[dt.time]:
    return st.integers(0, 86_400_000 - 1).map(
        lambda ms: (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)).time())


def _decimals(scale: int) -> st.SearchStrategy[decimal.Decimal]:
    return st.integers(-10**12, 10**12).map(
        lambda unscaled: decimal.Decimal(unscaled).scaleb(-scale))


@per_schema_object
def present_values(schema: Schema) -> st.SearchStrategy[Any]:
    """Values of ``schema`` that are not null (a Struct's optional fields may be); one
    strategy per schema (making strategies is what costs most)."""
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return _decimals(Decimal.scale(schema))
    if name == Date.LOGICAL_NAME:
        return _dates()
    if name == Time.LOGICAL_NAME:
        return _times()
    if name == Timestamp.LOGICAL_NAME:
        return _datetimes()
    kind = schema.type
    # mostly not a type's zero: a value masked (its zero) must differ from the value
    if kind in _INTEGERS:
        low, high = _INTEGERS[kind]
        return weighted((2, st.integers(1, 9)), (1, st.integers(-3, 3)),
                        (1, st.integers(low, high)))
    if kind is Type.FLOAT32:
        return weighted((2, st.sampled_from([1.5, -2.25, 1e10])), (1, _float32s()))
    if kind is Type.FLOAT64:
        return weighted((2, st.sampled_from([1.5, -2.25, 1e300, 0.1])),
                        (1, st.floats(allow_nan=False, allow_infinity=False)))
    if kind is Type.BOOLEAN:
        return st.booleans()
    if kind is Type.STRING:
        return st.one_of(st.sampled_from(["x", "orders", "2024-01-02", "42", "1.5", "true", ""]),
                         st.text(alphabet=_TEXT, max_size=6))
    if kind is Type.BYTES:
        return st.binary(min_size=1, max_size=6)
    if kind is Type.ARRAY:
        element = schema.value_schema
        assert element is not None
        return st.lists(values(element), max_size=3)
    if kind is Type.MAP:
        key_schema, value_schema = schema.key_schema, schema.value_schema
        assert key_schema is not None and value_schema is not None
        return st.dictionaries(present_values(key_schema), values(value_schema), max_size=3)
    return structs(schema)


@per_schema_object
def values(schema: Schema) -> st.SearchStrategy[Any]:
    """Values of ``schema``, null among them when it is optional."""
    present = present_values(schema)
    if schema.optional:
        # mostly present: a compiled chain takes only Structs without a null
        return weighted((5, present), (1, st.none()))
    return present


_ONE_IN_FOUR = st.sampled_from([True, False, False, False])


@per_schema_object
def dense_structs(schema: Schema) -> st.SearchStrategy[Struct]:
    """Structs of ``schema`` with a value in every field (nested values may be null): the
    Structs a compiled chain takes."""
    return st.tuples(*(present_values(f.schema) for f in schema.fields)).map(
        functools.partial(_struct_of, schema))


def _struct_of(schema: Schema, field_values: tuple[Any, ...]) -> Struct:
    struct = Struct(schema)
    for schema_field, value in zip(schema.fields, field_values, strict=True):
        struct.put(schema_field, value)
    return struct


@st.composite
def structs(draw: st.DrawFn, schema: Schema) -> Struct:
    """A Struct of ``schema``; an optional field may be null, and a required field with a
    default may be left unset (its default stands in)."""
    struct = Struct(schema)
    for schema_field in schema.fields:
        field_schema = schema_field.schema
        if field_schema.default is not None and not field_schema.optional and draw(
            _ONE_IN_FOUR
        ):
            continue
        value = draw(values(field_schema))
        if value is not None:
            struct.put(schema_field.name, value)
    return struct


# ---- schemas --------------------------------------------------------------------------------


@st.composite
def _primitive_builders(draw: st.DrawFn) -> SchemaBuilder:
    logical = draw(st.sampled_from((None, None, None, *_LOGICAL)))
    if logical == "Decimal":
        return Decimal.builder(draw(st.integers(0, 3)))
    if logical == "Date":
        return Date.builder()
    if logical == "Time":
        return Time.builder()
    if logical == "Timestamp":
        return Timestamp.builder()
    # bytes thrice as often: MaskField refuses bytes (and Structs) whatever it is told
    builder = SchemaBuilder.type(draw(st.sampled_from((*_PRIMITIVES, Type.BYTES, Type.BYTES))))
    _metadata(draw, builder)
    return builder


_PRIMITIVE_BUILDERS = _primitive_builders()


def _metadata(draw: st.DrawFn, builder: SchemaBuilder) -> None:
    """Now and then a name, a version, a doc and parameters (what SMTs must carry over)."""
    if draw(st.integers(0, 3)) == 0:
        builder.name(draw(st.sampled_from(["com.example.Thing", "Other"])))
    if draw(st.integers(0, 3)) == 0:
        builder.version(draw(st.integers(1, 3)))
    if draw(st.integers(0, 3)) == 0:
        builder.doc(draw(st.sampled_from(["the doc", ""])))
    if draw(st.integers(0, 4)) == 0:
        builder.parameters({"p": draw(st.sampled_from(["1", "x"]))})


@st.composite
def leaf_schemas(draw: st.DrawFn) -> Schema:
    """A primitive or logical schema, optional or not, maybe with a default."""
    builder = draw(_PRIMITIVE_BUILDERS)
    if draw(st.booleans()):
        builder.optional()
    if draw(st.integers(0, 3)) == 0:
        builder.default_value(draw(present_values(builder.build())))
    return builder.build()


def _containers(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    return st.one_of(
        st.builds(_array_of, children, st.booleans()),
        st.builds(_map_of, LEAF_SCHEMAS, children, st.booleans()),
        _struct_schemas(children),
    )


def _array_of(element: Schema, optional: bool) -> Schema:
    builder = SchemaBuilder.array(element)
    return (builder.optional() if optional else builder).build()


def _map_of(key: Schema, value: Schema, optional: bool) -> Schema:
    builder = SchemaBuilder.map(key, value)
    return (builder.optional() if optional else builder).build()


@st.composite
def _struct_schemas(draw: st.DrawFn, children: st.SearchStrategy[Schema]) -> Schema:
    """A struct of 1-4 fields named from the pool (mostly 2 or more, in any order), of
    ``children`` schemas (nested too)."""
    names = draw(st.permutations(FIELD_NAMES))[:draw(st.sampled_from([2, 3, 4, 1]))]
    builder = SchemaBuilder.struct()
    _metadata(draw, builder)
    for name in names:
        builder.field(name, draw(children))
    if draw(st.booleans()):
        builder.optional()
    return builder.build()


LEAF_SCHEMAS = leaf_schemas()
#: The schema of a field: mostly a leaf, else an array, a map or a struct (nested up to
#: two levels).
FIELD_SCHEMAS = weighted((3, LEAF_SCHEMAS), (1, st.recursive(LEAF_SCHEMAS, _containers,
                                                             max_leaves=4)))
STRUCT_SCHEMAS = _struct_schemas(FIELD_SCHEMAS)
_BYTES_SCHEMAS = st.sampled_from([Schema(Type.BYTES), Schema(Type.BYTES, optional=True)])
_COMPILED_FIELD_SCHEMAS = weighted((6, LEAF_SCHEMAS), (1, _BYTES_SCHEMAS), (1, FIELD_SCHEMAS))


@st.composite
def _compiled_struct_schemas(draw: st.DrawFn) -> Schema:
    """The structs of the chains that are compiled: their fields more often of the types
    MaskField refuses whatever it is told (bytes, a struct), and often of one schema (a
    mask on the wrong one of them passes their schemas' checks)."""
    palette = st.sampled_from([draw(_COMPILED_FIELD_SCHEMAS), draw(_COMPILED_FIELD_SCHEMAS)])
    return draw(_struct_schemas(weighted((2, palette), (1, _COMPILED_FIELD_SCHEMAS))))


COMPILED_STRUCT_SCHEMAS = _compiled_struct_schemas()
#: A key's or a value's schema: mostly a struct, else a leaf, a container or none
#: (schemaless).
SIDE_SCHEMAS = weighted((3, STRUCT_SCHEMAS), (1, LEAF_SCHEMAS), (1, FIELD_SCHEMAS), (1, st.none()))


# ---- records --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordData:
    """What a record carries, with its key and value as Connect data."""

    topic: str
    partition: int | None
    timestamp_ms: int | None
    key_schema: Schema | None
    key: Any
    value_schema: Schema | None
    value: Any
    #: Raw (name, bytes) pairs, or (name, schema, value) triples as ConnectHeaders.
    headers: tuple[tuple[Any, ...], ...]
    connect_headers: bool

    def source_headers(self) -> Any:
        if not self.connect_headers:
            return tuple((name, value) for name, value in self.headers)
        headers = ConnectHeaders()
        for name, schema, value in self.headers:
            headers.add(name, value, schema)
        return headers


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
    st.text(alphabet=_TEXT, max_size=4), st.floats(allow_nan=False, allow_infinity=False),
)
#: Schemaless data as JSON gives it: a map of longs, doubles, strings, booleans, nulls.
_SCHEMALESS_VALUES = st.one_of(
    st.dictionaries(st.sampled_from(CONFIG_FIELDS), _SCALARS, max_size=4), _SCALARS)


@per_schema_object
def _side_values(schema: Schema | None) -> st.SearchStrategy[Any]:
    if schema is None:
        return _SCHEMALESS_VALUES
    # a null now and then, even for a required schema (a converter or an SMT refuses it)
    if schema.optional:
        return values(schema)
    return weighted((3, present_values(schema)), (1, st.none()))


_RAW_HEADER_VALUES = st.one_of(
    st.none(), st.sampled_from([b"42", b"x", b"1.5", b"true", b"", b"[1,2]"]))
_HEADER_NAME_LISTS = st.lists(st.sampled_from(HEADER_NAMES), max_size=3)
_HEADER_SCHEMAS = st.sampled_from([None, Schema(Type.STRING), Schema(Type.INT32)])
_HEADER_TEXTS = st.text(alphabet=_TEXT, max_size=3)
_HEADER_INTS = st.integers(-5, 5)


@st.composite
def header_sets(draw: st.DrawFn) -> tuple[tuple[tuple[Any, ...], ...], bool]:
    """Raw (name, bytes) pairs, or (name, schema, value) triples for ConnectHeaders."""
    names = draw(_HEADER_NAME_LISTS)
    if draw(st.booleans()):
        return tuple((name, draw(_RAW_HEADER_VALUES)) for name in names), False
    typed = []
    for name in names:
        schema = draw(_HEADER_SCHEMAS)
        text = schema is None or schema.type is Type.STRING
        typed.append((name, schema, draw(_HEADER_TEXTS if text else _HEADER_INTS)))
    return tuple(typed), True


_HEADER_SETS = header_sets()
_TOPIC_NAMES = st.sampled_from(TOPICS)
_PARTITIONS = st.one_of(st.none(), st.integers(0, 3))
_TIMESTAMPS = st.one_of(st.none(), st.integers(0, 4 * 10**12))


@per_schema_object
def _dense_side_values(schema: Schema | None) -> st.SearchStrategy[Any]:
    """Mostly a Struct with no null value (when ``schema`` is a struct's), else any value."""
    if schema is None or schema.type is not Type.STRUCT:
        return _side_values(schema)
    return weighted((3, dense_structs(schema)), (1, _side_values(schema)))


@st.composite
def record_batches(
    draw: st.DrawFn,
    key_schemas: st.SearchStrategy[Schema | None] = SIDE_SCHEMAS,
    value_schemas: st.SearchStrategy[Schema | None] = SIDE_SCHEMAS,
    dense: str = "",
    pairs: list[tuple[Schema | None, Schema | None]] | None = None,
) -> list[RecordData]:
    """2-6 records of one or two (key schema, value schema) pairs (``pairs``, or drawn),
    mostly the first: the compiled chains are kept per schema, and the records after the
    first take them. ``dense`` ("key", "value") is the side whose Structs mostly have no
    null."""
    keys = _dense_side_values if dense == "key" else _side_values
    values_of = _dense_side_values if dense == "value" else _side_values
    if pairs is None:
        pairs = draw(st.lists(st.tuples(key_schemas, value_schemas), min_size=1, max_size=2))
    count = draw(st.integers(2, 6))
    records = []
    for _ in range(count):
        key_schema, value_schema = pairs[draw(st.sampled_from([0, 0, 0, len(pairs) - 1]))]
        headers, connect = draw(_HEADER_SETS)
        records.append(RecordData(
            topic=draw(_TOPIC_NAMES),
            partition=draw(_PARTITIONS),
            timestamp_ms=draw(_TIMESTAMPS),
            key_schema=key_schema,
            key=draw(keys(key_schema)),
            value_schema=value_schema,
            value=draw(values_of(value_schema)),
            headers=headers,
            connect_headers=connect,
        ))
    return records

"""The cases of the pipeline's differential test (``test_pipeline_differential``): connector
configs with random chains of the 16 built-in SMTs (valid configs, naming the fields and
headers of ``_differential_data``), their predicates (with ``negate``) and ``errors.*``, and
the records each chain is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from connect_grpc.data.schema import Schema
from tests.unit._differential_data import (
    COMPILED_STRUCT_SCHEMAS,
    CONFIG_FIELDS,
    FIELD_NAMES,
    HEADER_NAMES,
    SIDE_SCHEMAS,
    RecordData,
    record_batches,
    weighted,
)

SMT = "org.apache.kafka.connect.transforms."
PREDICATE = "org.apache.kafka.connect.transforms.predicates."
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


# ---- SMT and predicate configs --------------------------------------------------------------


#: 1-3 field names, as a LIST config value.
_NAMES = st.lists(st.sampled_from(CONFIG_FIELDS), min_size=1, max_size=3, unique=True).map(
    ",".join)
#: ``replace.null.with.default`` unset, true or false.
_NULL_DEFAULT: st.SearchStrategy[dict[str, str]] = st.one_of(
    st.just({}),
    st.sampled_from(["true", "false"]).map(lambda v: {"replace.null.with.default": v}),
)


def _with(base: st.SearchStrategy[dict[str, str]], *more: st.SearchStrategy[dict[str, str]]
          ) -> st.SearchStrategy[dict[str, str]]:
    return st.tuples(base, *more).map(lambda parts: {k: v for p in parts for k, v in p.items()})


_OUT_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")


@st.composite
def _cast(draw: st.DrawFn) -> dict[str, str]:
    if draw(st.booleans()):
        spec = draw(st.sampled_from(_OUT_TYPES))
    else:
        names = draw(st.lists(st.sampled_from(CONFIG_FIELDS), min_size=1, max_size=3,
                              unique=True))
        spec = ",".join(f"{name}:{draw(st.sampled_from(_OUT_TYPES))}" for name in names)
    return {"spec": spec, **draw(_NULL_DEFAULT)}


@st.composite
def _insert_field(draw: st.DrawFn) -> dict[str, str]:
    keys = draw(st.lists(
        st.sampled_from(["topic.field", "partition.field", "offset.field", "timestamp.field",
                         "static.field"]),
        min_size=1, max_size=3, unique=True))
    config = {
        name: draw(st.sampled_from((*CONFIG_FIELDS, "t", "s"))) + draw(
            st.sampled_from(["", "!", "?"]))
        for name in keys
    }
    if "static.field" in config:
        config["static.value"] = draw(st.sampled_from(["v", "42", ""]))
    return {**config, **draw(_NULL_DEFAULT)}


@st.composite
def _static_insert(draw: st.DrawFn) -> dict[str, str]:
    """InsertField of a static field only: the InsertField a chain compiles."""
    # mostly a field the struct lacks: one it has is refused (SchemaBuilder) for every value
    name = draw(st.sampled_from(("s", "s", "s", *CONFIG_FIELDS))) + draw(
        st.sampled_from(["", "!", "?"]))
    return {"static.field": name, "static.value": draw(st.sampled_from(["v", "42", ""])),
            **draw(_NULL_DEFAULT)}


@st.composite
def _replace_field(draw: st.DrawFn) -> dict[str, str]:
    config: dict[str, str] = {}
    if draw(st.booleans()):
        config["exclude"] = draw(_NAMES)
    if draw(st.integers(0, 2)) == 0:
        config["include"] = draw(_NAMES)
    if draw(st.booleans()):
        olds = draw(st.lists(st.sampled_from(CONFIG_FIELDS), min_size=1, max_size=2, unique=True))
        config["renames"] = ",".join(
            f"{old}:{draw(st.sampled_from(('r', 'b', 'a', 'text')))}" for old in olds)
    return {**config, **draw(_NULL_DEFAULT)}


@st.composite
def _mask_field(draw: st.DrawFn, names: Sequence[str] = FIELD_NAMES) -> dict[str, str]:
    """1-3 of ``names`` (the fields of the struct, where known), now and then one no
    schema has."""
    masked = st.lists(st.sampled_from((*names, *names, "x")), min_size=1, max_size=3,
                      unique=True)
    config = {"fields": ",".join(draw(masked))}
    if draw(st.integers(0, 3)) == 0:
        config["replacement"] = draw(st.sampled_from(["0", "***", "1.5", "7", "abc"]))
    return {**config, **draw(_NULL_DEFAULT)}


@st.composite
def _timestamp_converter(draw: st.DrawFn) -> dict[str, str]:
    target = draw(st.sampled_from(["string", "unix", "Date", "Time", "Timestamp"]))
    config = {"target.type": target, "field": draw(st.sampled_from(("", *CONFIG_FIELDS)))}
    if target == "string" or draw(st.booleans()):
        config["format"] = draw(st.sampled_from(["yyyy-MM-dd", "yyyyMMdd HH:mm:ss.SSS"]))
    if draw(st.booleans()):
        config["unix.precision"] = draw(st.sampled_from(
            ["seconds", "milliseconds", "microseconds", "nanoseconds"]))
    return {**config, **draw(_NULL_DEFAULT)}


@st.composite
def _header_from(draw: st.DrawFn) -> dict[str, str]:
    fields = draw(st.lists(st.sampled_from(CONFIG_FIELDS), min_size=1, max_size=2, unique=True))
    headers = draw(st.lists(st.sampled_from(HEADER_NAMES), min_size=len(fields),
                            max_size=len(fields)))
    return {"fields": ",".join(fields), "headers": ",".join(headers),
            "operation": draw(st.sampled_from(["move", "copy"])), **draw(_NULL_DEFAULT)}


@st.composite
def _set_schema_metadata(draw: st.DrawFn) -> dict[str, str]:
    config: dict[str, str] = {}
    if draw(st.booleans()):
        config["schema.name"] = draw(st.sampled_from(["com.example.Renamed", "Other"]))
    if not config or draw(st.booleans()):
        config["schema.version"] = str(draw(st.integers(1, 4)))
    return {**config, **draw(_NULL_DEFAULT)}


#: The config of each SMT (keys without ``transforms.<alias>.``); ``$Key``/``$Value``
#: variants share theirs.
SMT_CONFIGS: dict[str, st.SearchStrategy[dict[str, str]]] = {
    "Cast": _cast(),
    "DropHeaders": st.lists(st.sampled_from(HEADER_NAMES), min_size=1, max_size=2,
                            unique=True).map(lambda names: {"headers": ",".join(names)}),
    "ExtractField": _with(st.sampled_from(CONFIG_FIELDS).map(lambda f: {"field": f}),
                          _NULL_DEFAULT),
    "Filter": st.just({}),
    "Flatten": st.sampled_from([{}, {"delimiter": "_"}, {"delimiter": "#"}]),
    "HeaderFrom": _header_from(),
    "HoistField": st.sampled_from(CONFIG_FIELDS).map(lambda f: {"field": f}),
    "InsertField": _insert_field(),
    "InsertHeader": st.builds(lambda h, v: {"header": h, "value.literal": v},
                              st.sampled_from(HEADER_NAMES), st.sampled_from(["v", "42", "1.5"])),
    "MaskField": _mask_field(),
    "RegexRouter": st.sampled_from([
        {"regex": "(.*)", "replacement": "$1-routed"},
        {"regex": "orders(.*)", "replacement": "o$1"},
        {"regex": "audit", "replacement": "orders"},
    ]),
    "ReplaceField": _replace_field(),
    "SetSchemaMetadata": _set_schema_metadata(),
    "TimestampConverter": _timestamp_converter(),
    "TimestampRouter": st.sampled_from([
        {}, {"topic.format": "${topic}_${timestamp}", "timestamp.format": "yyyy-MM"},
    ]),
    "ValueToKey": _with(_NAMES.map(lambda f: {"fields": f}), _NULL_DEFAULT),
}
#: The SMTs with ``$Key`` and ``$Value`` variants.
SIDED = frozenset({
    "Cast", "ExtractField", "Flatten", "HeaderFrom", "HoistField", "InsertField", "MaskField",
    "ReplaceField", "SetSchemaMetadata", "TimestampConverter",
})
#: The SideTransformations: a chain of only these on one side, without predicates, is the
#: chain the task pipeline compiles per schema.
SIDE_TRANSFORMATIONS = ("InsertField", "ReplaceField", "MaskField", "HoistField")

#: Side chains' configs where they differ: InsertField mostly of a static field only.
_STATIC_INSERT = _static_insert()
_SIDE_CONFIGS = {"InsertField": weighted((4, _STATIC_INSERT), (1, _insert_field()))}

PREDICATE_CONFIGS: dict[str, st.SearchStrategy[dict[str, str]]] = {
    "TopicNameMatches": st.sampled_from(["orders", "orders.*", "x.*"]).map(
        lambda p: {"pattern": p}),
    "HasHeaderKey": st.sampled_from(HEADER_NAMES).map(lambda n: {"name": n}),
    "RecordIsTombstone": st.just({}),
}


@dataclass(frozen=True)
class Stage:
    """One SMT of a chain, as its ``transforms.<alias>.*`` keys say it."""

    smt: str  # e.g. "MaskField$Value", "RegexRouter"
    config: dict[str, str]
    predicate: tuple[str, dict[str, str], bool] | None = None  # (class, config, negate)

    def __repr__(self) -> str:
        where = f" if {'not ' if self.predicate[2] else ''}{self.predicate[0]}" \
            f"{self.predicate[1]}" if self.predicate else ""
        return f"{self.smt}{self.config}{where}"


@st.composite
def _any_stage(draw: st.DrawFn) -> Stage:
    name = draw(st.sampled_from(sorted(SMT_CONFIGS)))
    smt = name + draw(st.sampled_from(["$Key", "$Value", "$Value"])) if name in SIDED else name
    predicate = None
    if name == "Filter" or draw(st.integers(0, 3)) == 0:
        kind = draw(st.sampled_from(sorted(PREDICATE_CONFIGS)))
        predicate = (kind, draw(PREDICATE_CONFIGS[kind]), draw(st.booleans()))
    return Stage(smt, draw(SMT_CONFIGS[name]), predicate)


_SIDES = st.sampled_from(["$Value", "$Value", "$Key"])


@st.composite
def _side_chain(draw: st.DrawFn, side: str = "", fields: Sequence[str] = FIELD_NAMES
                ) -> list[Stage]:
    """SideTransformations on one side (``side``, or drawn), without predicates: the
    compiled path. MaskField masks some of ``fields``."""
    side = side or draw(_SIDES)
    smts = draw(st.lists(st.sampled_from(SIDE_TRANSFORMATIONS), min_size=1, max_size=5))
    if fields is not FIELD_NAMES and draw(st.booleans()):
        smts[0] = "MaskField"  # on the fields it was given, before they change
    configs = {**_SIDE_CONFIGS, "MaskField": _mask_field(tuple(fields))}
    return [Stage(smt + side, draw(configs.get(smt, SMT_CONFIGS[smt]))) for smt in smts]


def chains() -> st.SearchStrategy[list[Stage]]:
    """1-5 of any SMTs, some behind a predicate (a quarter of them a chain the task
    pipeline compiles)."""
    return weighted((1, _side_chain()), (3, st.lists(_any_stage(), min_size=1, max_size=5)))


@dataclass(frozen=True)
class Errors:
    tolerate_all: bool
    log_enable: bool
    include_messages: bool
    dlq: bool
    context_headers: bool

    def config(self) -> dict[str, str]:
        config = {
            "errors.tolerance": "all" if self.tolerate_all else "none",
            "errors.log.enable": str(self.log_enable).lower(),
            "errors.log.include.messages": str(self.include_messages).lower(),
        }
        if self.dlq:
            config["errors.deadletterqueue.topic.name"] = "dlq"
            config["errors.deadletterqueue.context.headers.enable"] = str(
                self.context_headers).lower()
        return config


def errors() -> st.SearchStrategy[Errors]:
    return st.builds(Errors, st.booleans(), st.booleans(), st.booleans(), st.booleans(),
                     st.booleans())


def connector_config(chain: list[Stage], error_handling: Errors, schemas_enable: bool = True
                     ) -> dict[str, str]:
    """The connector config of a chain: JsonConverter keys and values, the default header
    converter (SimpleHeaderConverter), each stage's ``transforms.t<n>.*`` and its predicate's
    ``predicates.p<n>.*``."""
    config = {
        "name": "diff",
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": str(schemas_enable).lower(),
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": str(schemas_enable).lower(),
        "transforms": ",".join(f"t{n}" for n in range(len(chain))),
        **error_handling.config(),
    }
    predicates = []
    for number, stage in enumerate(chain):
        prefix = f"transforms.t{number}."
        config[prefix + "type"] = SMT + stage.smt
        config.update({prefix + key: value for key, value in stage.config.items()})
        if stage.predicate is not None:
            kind, predicate_config, negate = stage.predicate
            alias = f"p{number}"
            predicates.append(alias)
            config[prefix + "predicate"] = alias
            config[prefix + "negate"] = str(negate).lower()
            config[f"predicates.{alias}.type"] = PREDICATE + kind
            config.update({f"predicates.{alias}.{k}": v for k, v in predicate_config.items()})
    if predicates:
        config["predicates"] = ",".join(predicates)
    return config


@dataclass
class Case:
    """One run: a chain, its error handling and the records it is given."""

    chain: list[Stage]
    errors: Errors
    records: list[RecordData]
    schemas_enable: bool = True

    def config(self) -> dict[str, str]:
        return connector_config(self.chain, self.errors, self.schemas_enable)


_SCHEMAS_ENABLE = st.sampled_from([True, True, True, False])


@st.composite
def compiled_cases(draw: st.DrawFn) -> Case:
    """A chain the task pipeline compiles (SideTransformations on one side, no predicate),
    on records whose side it works on is a struct, mostly without a null (the compiled
    chains take only those); MaskField masks fields the struct has."""
    side = draw(_SIDES)
    is_key = side == "$Key"
    structs = COMPILED_STRUCT_SCHEMAS
    pairs = draw(st.lists(st.tuples(structs if is_key else SIDE_SCHEMAS,
                                    SIDE_SCHEMAS if is_key else structs),
                          min_size=1, max_size=2))
    struct_schema = pairs[0][0 if is_key else 1]
    assert struct_schema is not None
    chain = draw(_side_chain(side, [f.name for f in struct_schema.fields]))
    records = draw(record_batches(dense="key" if is_key else "value", pairs=pairs))
    return Case(chain, draw(errors()), records, draw(_SCHEMAS_ENABLE))


def general_cases() -> st.SearchStrategy[Case]:
    """Any chain on any records."""
    return st.builds(Case, chains(), errors(), record_batches(), _SCHEMAS_ENABLE)


def one(value_schema: Schema | None = None, value: Any = None, *, key_schema: Schema | None = None,
        key: Any = None, topic: str = "orders") -> RecordData:
    """A record of the explicit cases."""
    return RecordData(topic, 0, 1_700_000_000_000, key_schema, key, value_schema, value, (), False)

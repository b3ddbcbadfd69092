"""Whether a source's transformations certainly hand its converters data they cannot write.

This worker lets a connector run with no key or value converter (the bytes pass through, see
``pipeline.build``), where Kafka Connect requires both. Such a side takes only bytes and
str. A source whose transformation chain turns every value (or key) into a Struct or a Map
(``HoistField$Value`` wraps even a plain line in one) would then fail each record at the
converter, and its task would go FAILED: Kafka's own documented SMT example does, on a
worker without converters. Validation refuses that config instead, on ``value.converter``
(or ``key.converter``), saying why.

Only when it is certain from the config: the chain ends a side on a transformation that
always makes Struct/Map data of it (no predicate), followed only by transformations known to
keep such data structured (or to fail on it); a converter that cannot write a Struct (none,
``ByteArrayConverter``, the number and boolean converters) takes that side. A chain with a
transformation this module does not know (a custom one, ``Filter``, ``Cast``, …) after the
last maker is never refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.connectors.pipeline_plugins import PluginClassError, PluginKind
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.data.converters import (
    BooleanConverter,
    ByteArrayConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
)
from connect_grpc.data.transforms.drop_headers import DropHeaders
from connect_grpc.data.transforms.flatten import FlattenKey, FlattenValue
from connect_grpc.data.transforms.header_from import HeaderFromKey, HeaderFromValue
from connect_grpc.data.transforms.hoist_field import HoistFieldKey, HoistFieldValue
from connect_grpc.data.transforms.insert_field import InsertFieldKey, InsertFieldValue
from connect_grpc.data.transforms.insert_header import InsertHeader
from connect_grpc.data.transforms.mask_field import MaskFieldKey, MaskFieldValue
from connect_grpc.data.transforms.regex_router import RegexRouter
from connect_grpc.data.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue
from connect_grpc.data.transforms.set_schema_metadata import (
    SetSchemaMetadataKey,
    SetSchemaMetadataValue,
)
from connect_grpc.data.transforms.timestamp_router import TimestampRouter
from connect_grpc.data.transforms.value_to_key import ValueToKey
from connect_grpc.kernel.configdef import java_trim
from connect_grpc.pipeline.config import aliases
from connect_grpc.pipeline.keys import KEY_CONVERTER, PREDICATE, TRANSFORMS, VALUE_CONVERTER

__all__ = ["unwritable_output_errors"]

_KEY, _VALUE = "key", "value"

#: Transformations that make every record's side Struct/Map data (or fail the record):
#: HoistField wraps any value, a null too; ValueToKey builds the key from a Struct/Map value.
_MAKERS: dict[str, tuple[type, ...]] = {
    _KEY: (HoistFieldKey, ValueToKey),
    _VALUE: (HoistFieldValue,),
}

#: Transformations that leave structured data of a side structured (or fail the record):
#: those that change fields, and those that do not touch that side at all.
_NEUTRAL: tuple[type, ...] = (DropHeaders, InsertHeader, RegexRouter, TimestampRouter)
_KEEPERS: dict[str, tuple[type, ...]] = {
    _KEY: (
        *_NEUTRAL,
        *_MAKERS[_KEY],
        InsertFieldKey,
        ReplaceFieldKey,
        MaskFieldKey,
        FlattenKey,
        SetSchemaMetadataKey,
        HeaderFromKey,
        HoistFieldValue,
        InsertFieldValue,
        ReplaceFieldValue,
        MaskFieldValue,
        FlattenValue,
        SetSchemaMetadataValue,
        HeaderFromValue,
    ),
    _VALUE: (
        *_NEUTRAL,
        *_MAKERS[_VALUE],
        InsertFieldValue,
        ReplaceFieldValue,
        MaskFieldValue,
        FlattenValue,
        SetSchemaMetadataValue,
        HeaderFromValue,
        ValueToKey,
        HoistFieldKey,
        InsertFieldKey,
        ReplaceFieldKey,
        MaskFieldKey,
        FlattenKey,
        SetSchemaMetadataKey,
        HeaderFromKey,
    ),
}

#: Converters that cannot write a Struct or a Map (None: no converter, bytes and str only).
_UNSTRUCTURED_CONVERTERS: tuple[type, ...] = (
    ByteArrayConverter,
    BooleanConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
)


def unwritable_output_errors(
    config: Mapping[str, str], plugins: Plugins, worker_converters: Mapping[str, str]
) -> dict[str, list[str]]:
    """The errors, on ``key.converter`` / ``value.converter``, of a (resolved) source config
    whose transformations certainly make a side's data Struct/Map while that side's converter
    (the connector's, else the worker's ``worker_converters``) cannot write it. Empty when
    unsure, and when a class does not resolve (its own key reports that)."""
    stages = _stages(config, plugins)
    if stages is None:
        return {}
    errors: dict[str, list[str]] = {}
    for side, class_key in ((_KEY, KEY_CONVERTER), (_VALUE, VALUE_CONVERTER)):
        maker = _last_maker(stages, side)
        if maker is None:
            continue
        converter = _converter(config, plugins, worker_converters, class_key)
        if converter is False:
            continue
        alias, type_name = maker
        made = (
            f"transforms.{alias} ({type_name}) makes every record's {side} a Struct "
            "(a Map without a schema)"
        )
        if converter is None:
            reason = (
                f"{made}, but neither the connector nor the worker sets {class_key}, "
                f"so the {side} would go out as it is, which works only for bytes and "
                f"strings: each record would fail and the task with it. Set {class_key} "
                "to a converter that writes Structs, such as "
                "org.apache.kafka.connect.json.JsonConverter (Kafka Connect's worker "
                "files set it)"
            )
        else:
            reason = (
                f"{made}, which the {class_key} {converter} cannot write: each record "
                "would fail and the task with it. Use a converter that writes Structs, "
                "such as org.apache.kafka.connect.json.JsonConverter"
            )
        errors[class_key] = [reason]
    return errors


_Stage = tuple[str, str, type, bool]


def _stages(config: Mapping[str, str], plugins: Plugins) -> list[_Stage] | None:
    """(alias, type as written, class, has a predicate) of each transformation, or None when
    one does not resolve."""
    stages = []
    for alias in aliases(config, TRANSFORMS):
        raw = config.get(f"{TRANSFORMS}.{alias}.type")
        if raw is None:
            return None
        try:
            cls = plugins.pipeline.plugin_class(PluginKind.TRANSFORMATION, raw)
        except (PluginClassError, ImportError, ValueError):
            return None
        predicate = config.get(f"{TRANSFORMS}.{alias}.{PREDICATE}")
        stages.append((alias, java_trim(raw), cls, bool(predicate and predicate.strip())))
    return stages


def _last_maker(stages: list[_Stage], side: str) -> tuple[str, str] | None:
    """The (alias, type) of the stage that certainly made the side structured, if the stages
    after it keep it so; else None."""
    maker: tuple[str, str] | None = None
    for alias, type_name, cls, has_predicate in stages:
        if cls in _MAKERS[side] and not has_predicate:
            maker = (alias, type_name)
        elif cls not in _KEEPERS[side]:
            maker = None
    return maker


def _converter(
    config: Mapping[str, str],
    plugins: Plugins,
    worker_converters: Mapping[str, str],
    class_key: str,
) -> Any:
    """The converter that takes the side, as its class name when it cannot write a Struct,
    None for no converter, False when it can (or is unknown: its own key reports that)."""
    raw = config.get(class_key)
    if raw is None:
        raw = worker_converters.get(class_key)
    if raw is None:
        return None
    if not raw.strip():
        return False
    try:
        cls = plugins.pipeline.plugin_class(PluginKind.CONVERTER, raw)
    except (PluginClassError, ImportError, ValueError):
        return False
    return java_trim(raw) if cls in _UNSTRUCTURED_CONVERTERS else False

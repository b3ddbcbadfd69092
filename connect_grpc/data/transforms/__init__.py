"""The 16 built-in single message transformations of Kafka Connect.

Each SMT is a module; an SMT with ``$Key``/``$Value`` variants has them as subclasses
named ``<Name>Key`` and ``<Name>Value`` (``Cast$Value`` is :class:`CastValue`), the base
class holding the logic. :data:`BUILTIN_TRANSFORMS` maps Kafka Connect's class names
(``org.apache.kafka.connect.transforms.Cast$Value``) to them.

Where a message of Kafka's names a Java class (``found: java.lang.String``), ours names the
Python class (``found: str``).
"""

from __future__ import annotations

from typing import Any

from connect_grpc.data.plugins import Transformation
from connect_grpc.data.transforms.cast import CastKey, CastValue
from connect_grpc.data.transforms.drop_headers import DropHeaders
from connect_grpc.data.transforms.extract_field import ExtractFieldKey, ExtractFieldValue
from connect_grpc.data.transforms.filter import Filter
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
from connect_grpc.data.transforms.timestamp_converter import (
    TimestampConverterKey,
    TimestampConverterValue,
)
from connect_grpc.data.transforms.timestamp_router import TimestampRouter
from connect_grpc.data.transforms.value_to_key import ValueToKey

_PREFIX = "org.apache.kafka.connect.transforms."

_KEY_VALUE_VARIANTS: dict[str, tuple[type[Transformation[Any]], type[Transformation[Any]]]] = {
    "Cast": (CastKey, CastValue),
    "ExtractField": (ExtractFieldKey, ExtractFieldValue),
    "Flatten": (FlattenKey, FlattenValue),
    "HeaderFrom": (HeaderFromKey, HeaderFromValue),
    "HoistField": (HoistFieldKey, HoistFieldValue),
    "InsertField": (InsertFieldKey, InsertFieldValue),
    "MaskField": (MaskFieldKey, MaskFieldValue),
    "ReplaceField": (ReplaceFieldKey, ReplaceFieldValue),
    "SetSchemaMetadata": (SetSchemaMetadataKey, SetSchemaMetadataValue),
    "TimestampConverter": (TimestampConverterKey, TimestampConverterValue),
}

_SINGLE: dict[str, type[Transformation[Any]]] = {
    "DropHeaders": DropHeaders,
    "Filter": Filter,
    "InsertHeader": InsertHeader,
    "RegexRouter": RegexRouter,
    "TimestampRouter": TimestampRouter,
    "ValueToKey": ValueToKey,
}

#: The built-in transformations by Kafka Connect's class name.
BUILTIN_TRANSFORMS: dict[str, type[Transformation[Any]]] = {
    **{_PREFIX + name: cls for name, cls in _SINGLE.items()},
    **{_PREFIX + name + "$Key": key for name, (key, _) in _KEY_VALUE_VARIANTS.items()},
    **{_PREFIX + name + "$Value": value for name, (_, value) in _KEY_VALUE_VARIANTS.items()},
}

__all__ = ["BUILTIN_TRANSFORMS"]

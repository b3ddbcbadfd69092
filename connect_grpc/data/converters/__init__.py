"""Kafka Connect's built-in converters and header converters, keyed by Kafka's class names."""

from __future__ import annotations

from connect_grpc.data.converters.boolean import BooleanConverter
from connect_grpc.data.converters.bytearray import ByteArrayConverter
from connect_grpc.data.converters.json import JsonConverter
from connect_grpc.data.converters.number import (
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
)
from connect_grpc.data.converters.simple_header import SimpleHeaderConverter
from connect_grpc.data.converters.string import StringConverter

#: Kafka's fully qualified class name → our class. Every one is a HeaderConverter; all but
#: SimpleHeaderConverter are also Converters (as in Kafka).
BUILTIN_CONVERTERS: dict[str, type] = {
    "org.apache.kafka.connect.json.JsonConverter": JsonConverter,
    "org.apache.kafka.connect.storage.StringConverter": StringConverter,
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": SimpleHeaderConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayConverter,
    "org.apache.kafka.connect.converters.BooleanConverter": BooleanConverter,
    "org.apache.kafka.connect.converters.DoubleConverter": DoubleConverter,
    "org.apache.kafka.connect.converters.FloatConverter": FloatConverter,
    "org.apache.kafka.connect.converters.IntegerConverter": IntegerConverter,
    "org.apache.kafka.connect.converters.LongConverter": LongConverter,
    "org.apache.kafka.connect.converters.ShortConverter": ShortConverter,
}

__all__ = [
    "BUILTIN_CONVERTERS",
    "BooleanConverter",
    "ByteArrayConverter",
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "JsonConverter",
    "LongConverter",
    "ShortConverter",
    "SimpleHeaderConverter",
    "StringConverter",
]

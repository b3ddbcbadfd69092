"""BUILTIN_TRANSFORMS: every Kafka Connect SMT class name, each a working Transformation
whose keys ValidateConfig can list."""

from __future__ import annotations

from connect_grpc.data.plugins import Transformation
from connect_grpc.data.transforms import BUILTIN_TRANSFORMS
from connect_grpc.data.transforms.cast import Cast, CastKey, CastValue
from connect_grpc.data.transforms.filter import Filter

from ._smt_records import sink

KEY_VALUE = ["Cast", "ExtractField", "Flatten", "HeaderFrom", "HoistField", "InsertField",
             "MaskField", "ReplaceField", "SetSchemaMetadata", "TimestampConverter"]
SINGLE = ["DropHeaders", "Filter", "InsertHeader", "RegexRouter", "TimestampRouter",
          "ValueToKey"]


def test_every_kafka_class_name_is_there() -> None:
    prefix = "org.apache.kafka.connect.transforms."
    expected = {prefix + name for name in SINGLE} | {
        prefix + name + variant for name in KEY_VALUE for variant in ("$Key", "$Value")}
    assert set(BUILTIN_TRANSFORMS) == expected
    assert len(BUILTIN_TRANSFORMS) == 26


def test_variants_are_the_key_and_value_subclasses() -> None:
    assert BUILTIN_TRANSFORMS["org.apache.kafka.connect.transforms.Cast$Key"] is CastKey
    assert BUILTIN_TRANSFORMS["org.apache.kafka.connect.transforms.Cast$Value"] is CastValue
    assert issubclass(CastKey, Cast)
    assert BUILTIN_TRANSFORMS["org.apache.kafka.connect.transforms.Filter"] is Filter


def test_each_is_a_transformation_with_described_keys() -> None:
    for name, cls in BUILTIN_TRANSFORMS.items():
        assert issubclass(cls, Transformation), name
        for info in cls().config_def().describe():
            assert info.documentation, (name, info.name)


def test_key_variants_work_on_the_key() -> None:
    smt = BUILTIN_TRANSFORMS["org.apache.kafka.connect.transforms.HoistField$Key"]()
    smt.configure({"field": "k"})
    hoisted = smt.apply(sink("v", key="x"))
    assert (hoisted.key, hoisted.value) == ({"k": "x"}, "v")
    smt.close()


def test_each_can_be_closed_even_unconfigured() -> None:
    for cls in BUILTIN_TRANSFORMS.values():
        cls().close()

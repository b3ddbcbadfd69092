"""DropHeaders, HeaderFrom and InsertHeader: the SMTs that write headers."""

from __future__ import annotations

import pytest

from connect_grpc.data.errors import DataError
from connect_grpc.data.headers import ConnectHeaders, Header
from connect_grpc.data.schema import INT32_SCHEMA, INT64_SCHEMA, STRING_SCHEMA, SchemaBuilder
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms.drop_headers import DropHeaders
from connect_grpc.data.transforms.header_from import HeaderFromKey, HeaderFromValue

from ._smt_records import configured, sink

SCHEMA = SchemaBuilder.struct().name("r").field("id", INT32_SCHEMA).field(
    "name", STRING_SCHEMA).build()


def headers_of(record: object) -> list[tuple[str, object, object]]:
    return [(h.key, h.value, h.schema) for h in record.headers]  # type: ignore[attr-defined]


# --- DropHeaders ------------------------------------------------------------------------


def test_drop_headers_removes_every_header_with_the_names_and_keeps_order() -> None:
    raw = (("a", b"1"), ("drop", b"x"), ("b", b"2"), ("drop", b"y"), ("other", None))
    dropped = configured(DropHeaders, headers="drop,other").apply(sink("v", headers=raw))
    assert isinstance(dropped.headers, ConnectHeaders)
    assert headers_of(dropped) == [("a", b"1", None), ("b", b"2", None)]
    assert dropped.value == "v"


def test_drop_headers_keeps_typed_headers() -> None:
    headers = ConnectHeaders().add("n", 5, INT32_SCHEMA).add("d", "x")
    dropped = configured(DropHeaders, headers="d").apply(sink("v", headers=headers))
    assert list(dropped.headers) == [Header("n", INT32_SCHEMA, 5)]
    assert len(headers) == 2  # the input's headers are not changed


def test_drop_headers_needs_a_non_empty_list() -> None:
    assert DropHeaders().config_def().validate({"headers": ""})["headers"] == [
        "Invalid value [] for configuration headers: Empty list"]
    with pytest.raises(ValueError, match="Missing required configuration"):
        configured(DropHeaders)


# --- HeaderFrom -------------------------------------------------------------------------


def test_header_from_copy_schemaless_reference_example() -> None:
    copied = configured(HeaderFromValue, fields="id", headers="X-Id", operation="copy").apply(
        sink({"id": 7}, headers=(("X-Id", b"old"),)))
    assert copied.value == {"id": 7}
    assert headers_of(copied) == [("X-Id", b"old", None), ("X-Id", 7, None)]


def test_header_from_move_schemaless_missing_field_gives_null_header() -> None:
    moved = configured(HeaderFromKey, fields="a,missing", headers="h1,h2",
                       operation="move").apply(sink("v", key={"a": 1, "b": 2}))
    assert moved.key == {"b": 2}
    assert headers_of(moved) == [("h1", 1, None), ("h2", None, None)]


def test_header_from_with_schema_move_and_copy() -> None:
    value = Struct(SCHEMA).put("id", 7).put("name", "n")
    moved = configured(HeaderFromValue, fields="id", headers="X-Id", operation="move").apply(
        sink(value, SCHEMA))
    assert [f.name for f in moved.value_schema.fields] == ["name"]
    assert moved.value_schema.name == "r"
    assert moved.value.get("name") == "n"
    assert headers_of(moved) == [("X-Id", 7, INT32_SCHEMA)]
    copied = configured(HeaderFromValue, fields="name", headers="N", operation="copy").apply(
        sink(value, SCHEMA))
    assert (copied.value_schema, copied.value) == (SCHEMA, value)
    assert headers_of(copied) == [("N", "n", STRING_SCHEMA)]


def test_header_from_errors_on_bad_input() -> None:
    smt = configured(HeaderFromValue, fields="id", headers="h", operation="move")
    with pytest.raises(DataError, match=r"^Only Map objects supported in absence of schema for "
                                        r"\[header move\], found: null$"):
        smt.apply(sink(None))
    with pytest.raises(DataError, match=r"^Only Struct objects supported for \[header move\]"):
        smt.apply(sink(5, INT64_SCHEMA))
    with pytest.raises(DataError, match=r"^Field does not exist: nope$"):
        configured(HeaderFromValue, fields="nope", headers="h", operation="copy").apply(
            sink(Struct(SCHEMA).put("id", 1).put("name", "n"), SCHEMA))


def test_header_from_config_errors() -> None:
    errors = HeaderFromValue().config_def().validate(
        {"fields": "a", "headers": "", "operation": "MOVE"})
    assert errors["headers"] == ["Invalid value [] for configuration headers: Empty list"]
    assert errors["operation"] == [
        "Invalid value MOVE for configuration operation: String must be one of: move, copy"]
    with pytest.raises(ValueError, match=r"^'fields' config must have the same number of "
                                         r"elements as 'headers' config.$"):
        configured(HeaderFromValue, fields="a,b", headers="h", operation="copy")

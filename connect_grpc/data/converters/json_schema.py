"""Connect schemas as the JSON of JsonConverter's envelope, and back (Kafka's
``asJsonSchema`` / ``asConnectSchema``).

The schema's JSON has Kafka's key order (``type``, ``items`` | ``keys``, ``values`` |
``fields``, ``optional`` always, ``name``, ``version``, ``doc``, ``parameters``,
``default``; ``field`` last in a struct field's schema). A schema's default is written and
read with the value writer and reader of that schema, so the schema codec sits on top of
both value directions (:mod:`.json_writers`, :mod:`.json_readers`): :class:`_Compiler`, the
one compiler a converter keeps, is this codec with the two halves mixed in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from connect_grpc.data.converters.json_codegen import Reader, Writer, _remember
from connect_grpc.data.converters.json_readers import _ReaderCompiler
from connect_grpc.data.converters.json_writers import _WriterCompiler
from connect_grpc.data.errors import DataError
from connect_grpc.data.javatext import wrap_signed
from connect_grpc.data.schema import Schema, SchemaBuilder, Type

_JSON_TYPE_NAMES: Final = {
    Type.INT8: "int8", Type.INT16: "int16", Type.INT32: "int32", Type.INT64: "int64",
    Type.FLOAT32: "float", Type.FLOAT64: "double", Type.BOOLEAN: "boolean",
    Type.STRING: "string", Type.BYTES: "bytes", Type.ARRAY: "array", Type.MAP: "map",
    Type.STRUCT: "struct",
}
_BUILDERS_BY_JSON_NAME: Final[dict[str, Callable[[], SchemaBuilder]]] = {
    "boolean": SchemaBuilder.bool, "int8": SchemaBuilder.int8, "int16": SchemaBuilder.int16,
    "int32": SchemaBuilder.int32, "int64": SchemaBuilder.int64, "float": SchemaBuilder.float32,
    "double": SchemaBuilder.float64, "bytes": SchemaBuilder.bytes, "string": SchemaBuilder.string,
}


class _Compiler(_WriterCompiler, _ReaderCompiler):
    """Builds, per schema, the functions that write and read values of that schema, and the
    schema's JSON; each built once per schema (memoised by schema) and then reused."""

    def __init__(self, *, numeric_decimals: bool, replace_null: bool, memo_size: int) -> None:
        self.numeric_decimals = numeric_decimals
        self._memo_size = max(memo_size, 16)
        self.replace_null = replace_null
        self._writers: dict[Schema, Writer] = {}
        self._readers: dict[Schema, Reader] = {}
        self._json_schemas: dict[Schema, dict[str, Any]] = {}

    # -- schema → JSON --

    def json_schema(self, schema: Schema) -> dict[str, Any]:
        cached = self._json_schemas.get(schema)
        if cached is None:
            cached = self._build_json_schema(schema)
            _remember(self._json_schemas, schema, cached, self._memo_size)
        return cached

    def _build_json_schema(self, schema: Schema) -> dict[str, Any]:
        result: dict[str, Any] = {"type": _JSON_TYPE_NAMES[schema.type]}
        if schema.type is Type.ARRAY:
            result["items"] = self._sub_schema(schema.value_schema)
        elif schema.type is Type.MAP:
            result["keys"] = self._sub_schema(schema.key_schema)
            result["values"] = self._sub_schema(schema.value_schema)
        elif schema.type is Type.STRUCT:
            result["fields"] = [
                {**self.json_schema(field.schema), "field": field.name} for field in schema.fields
            ]
        result["optional"] = schema.optional
        if schema.name is not None:
            result["name"] = schema.name
        if schema.version is not None:
            result["version"] = schema.version
        if schema.doc is not None:
            result["doc"] = schema.doc
        if schema.parameters is not None:
            result["parameters"] = dict(schema.parameters)
        if schema.default is not None:
            result["default"] = self._non_null_writer(schema)(schema.default)
        return result

    def _sub_schema(self, schema: Schema | None) -> dict[str, Any] | None:
        return None if schema is None else self.json_schema(schema)

    # -- JSON → schema (Kafka's asConnectSchema) --

    def connect_schema(self, schema_json: Any) -> Schema | None:
        if schema_json is None:
            return None
        type_name = schema_json.get("type") if isinstance(schema_json, dict) else None
        if not isinstance(type_name, str):
            raise DataError("Schema must contain 'type' field")
        builder = self._builder_of(type_name, schema_json)
        optional = schema_json.get("optional")
        if optional is True:
            builder.optional()
        else:
            builder.required()
        name = schema_json.get("name")
        if isinstance(name, str):
            builder.name(name)
        version = schema_json.get("version")
        if isinstance(version, int) and not isinstance(version, bool):
            builder.version(wrap_signed(version, 32))
        doc = schema_json.get("doc")
        if isinstance(doc, str):
            builder.doc(doc)
        parameters = schema_json.get("parameters")
        if isinstance(parameters, dict):
            for key, text in parameters.items():
                if not isinstance(text, str):
                    raise DataError("Schema parameters must have string values.")
                builder.parameter(key, text)
        if "default" in schema_json:
            so_far = builder.build()
            builder.default_value(self._build_reader(so_far)(schema_json["default"]))
        return builder.build()

    def _builder_of(self, type_name: str, schema_json: dict[str, Any]) -> SchemaBuilder:
        simple = _BUILDERS_BY_JSON_NAME.get(type_name)
        if simple is not None:
            return simple()
        if type_name == "array":
            items = schema_json.get("items")
            if items is None:
                raise DataError("Array schema did not specify the element type")
            return SchemaBuilder.array(self._required_schema(items))
        if type_name == "map":
            if "keys" not in schema_json:
                raise DataError("Map schema did not specify the key type")
            if "values" not in schema_json:
                raise DataError("Map schema did not specify the value type")
            return SchemaBuilder.map(
                self._required_schema(schema_json["keys"]),
                self._required_schema(schema_json["values"]),
            )
        if type_name == "struct":
            builder = SchemaBuilder.struct()
            fields = schema_json.get("fields")
            if not isinstance(fields, list):
                raise DataError('Struct schema\'s "fields" argument is not an array.')
            for field in fields:
                name = field.get("field") if isinstance(field, dict) else None
                if not isinstance(name, str):
                    raise DataError("Struct schema's field name not specified properly")
                builder.field(name, self._required_schema(field))
            return builder
        raise DataError(f"Unknown schema type: {type_name}")

    def _required_schema(self, schema_json: Any) -> Schema:
        schema = self.connect_schema(schema_json)
        if schema is None:  # Kafka's builder refuses a null key, value or field schema
            raise DataError("Schema must not be null here")
        return schema

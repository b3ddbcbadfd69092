"""Everything a plugin author imports, from one place.

Connectors and tasks, their records and contexts (``connectors.api``); the config
definitions (``kernel.configdef``); the Connect data model: schemas, structs, headers,
logical types (``data``); the converter, transformation and predicate interfaces
(``data.plugins``); and the exceptions a plugin raises or catches. Every name here is the
very object of the module that defines it, so a plugin written against those modules and
one written against this one interoperate.

The names in ``__all__`` are the plugin API's promise (docs/plugin-api.md, "Stability and
deprecation"): they keep their meaning within a minor version, and one that must move stays
importable from here, with a ``DeprecationWarning``, for the deprecation period.
"""

from __future__ import annotations

from connect_grpc.connectors.api import (
    PLUGIN_VERSION,
    AlterOffsetsUnsupportedError,
    Connector,
    ConnectorContext,
    ConnectorTransactionBoundaries,
    ErrantRecordReporter,
    ExactlyOnceSupport,
    RecordMetadata,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SinkTaskContext,
    SourceConnector,
    SourceRecord,
    SourceTask,
    SourceTaskContext,
    Task,
    TaskContext,
    TimestampType,
    TransactionBoundary,
    TransactionContext,
)
from connect_grpc.connectors.plugin_metrics import MetricName, Monitorable, PluginMetrics
from connect_grpc.data.errors import DataError, RetriableError, SchemaBuilderError
from connect_grpc.data.headers import ConnectHeaders, Header
from connect_grpc.data.logical import Date, Decimal, Time, Timestamp
from connect_grpc.data.plugins import (
    ConnectPlugin,
    Converter,
    HeaderConverter,
    Predicate,
    SchemaAndValue,
    Transformation,
)
from connect_grpc.data.record import KEEP, ConnectRecord
from connect_grpc.data.schema import Field, Schema, SchemaBuilder
from connect_grpc.data.schema import Type as SchemaType
from connect_grpc.data.struct import Struct
from connect_grpc.kernel.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    Validator,
    all_of,
    at_least,
    at_most,
    define_all,
    finite,
    non_empty_list,
    non_empty_string,
    one_of,
    one_of_ignoring_case,
    single_topic,
    valid_regex,
)
from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive

__all__ = [
    "KEEP",
    "PLUGIN_VERSION",
    "AlterOffsetsUnsupportedError",
    "ConfigDef",
    "ConfigKey",
    "ConfigType",
    "ConnectHeaders",
    "ConnectPlugin",
    "ConnectRecord",
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "Converter",
    "DataError",
    "Date",
    "Decimal",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "Field",
    "Header",
    "HeaderConverter",
    "Importance",
    "MetricName",
    "Monitorable",
    "OffsetMap",
    "OffsetPrimitive",
    "PluginMetrics",
    "Predicate",
    "RecordMetadata",
    "RetriableError",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "SchemaBuilderError",
    "SchemaType",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Struct",
    "Task",
    "TaskContext",
    "Time",
    "Timestamp",
    "TimestampType",
    "TransactionBoundary",
    "TransactionContext",
    "Transformation",
    "Validator",
    "all_of",
    "at_least",
    "at_most",
    "define_all",
    "finite",
    "non_empty_list",
    "non_empty_string",
    "one_of",
    "one_of_ignoring_case",
    "single_topic",
    "valid_regex",
]

"""The record pipeline's config: plugin resolution (Kafka class names, aliases, Python paths,
entry points), the framework keys and every refusal ValidateConfig makes, the converter
override rule, and build_pipeline.

The plugins here are small real implementations of the data/plugins.py interfaces,
registered under Kafka Connect's class names in place of the built-in tables."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from connect_grpc import __version__
from connect_grpc.app import StandaloneProcess
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.pipeline_plugins import PluginClassError, PluginKind
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.data.plugins import (
    Converter,
    HeaderConverter,
    Predicate,
    SchemaAndValue,
    Transformation,
)
from connect_grpc.data.predicates import BUILTIN_PREDICATES
from connect_grpc.data.transforms import BUILTIN_TRANSFORMS
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.herder.validation import ConfigValidator
from connect_grpc.kernel.configdef import ConfigDef, ConfigKey, ConfigType, non_empty_list, one_of
from connect_grpc.kernel.errors import InvalidArgumentError, StartupError
from connect_grpc.pipeline.build import build_pipeline, check_worker_converters
from connect_grpc.pipeline.config import ErrorHandling, PipelineConfigError
from connect_grpc.storage.file_offsets import FileOffsetStore

CLOSED: list[str] = []


class JsonLikeConverter(Converter, HeaderConverter):
    """A converter and a header converter, like Kafka's JsonConverter."""

    def __init__(self) -> None:
        self.configs: dict[str, str] = {}
        self.is_key: bool | None = None

    def configure(self, configs: Mapping[str, str], is_key: bool = False) -> None:  # type: ignore[override]
        if configs.get("schemas.enable", "true") not in ("true", "false"):
            raise ValueError("schemas.enable must be true or false")
        self.configs, self.is_key = dict(configs), is_key

    def config_def(self) -> ConfigDef:
        return ConfigDef().define(ConfigKey(
            "decimal.format", ConfigType.STRING, "doc", default="BASE64",
            validator=one_of("BASE64", "NUMERIC"), group="Serialization",
        )).define(ConfigKey(
            "converter.type", ConfigType.STRING, "doc", validator=one_of("key", "value", "header")
        ))

    def from_connect_data(self, topic: str, headers: Any, schema: Any, value: Any) -> bytes | None:
        return None if value is None else str(value).encode()

    def to_connect_data(self, topic: str, headers: Any, value: bytes | None) -> SchemaAndValue:
        return SchemaAndValue(None, value)

    def from_connect_header(self, topic: str, key: str, schema: Any, value: Any) -> bytes | None:
        return None if value is None else str(value).encode()

    def to_connect_header(self, topic: str, key: str, value: bytes | None) -> SchemaAndValue:
        return SchemaAndValue(None, value)

    def close(self) -> None:
        CLOSED.append(type(self).__name__)


class StringLikeConverter(JsonLikeConverter):
    pass


class SimpleLikeHeaderConverter(HeaderConverter):
    def __init__(self) -> None:
        self.configs: dict[str, str] = {}

    def configure(self, configs: Mapping[str, str]) -> None:
        self.configs = dict(configs)

    def from_connect_header(self, topic: str, key: str, schema: Any, value: Any) -> bytes | None:
        return None if value is None else str(value).encode()

    def to_connect_header(self, topic: str, key: str, value: bytes | None) -> SchemaAndValue:
        return SchemaAndValue(None, value)


class MaskValue(Transformation[Any]):
    def __init__(self) -> None:
        self.configs: dict[str, str] = {}

    def config_def(self) -> ConfigDef:
        return ConfigDef().define(ConfigKey(
            "fields", ConfigType.LIST, "Fields to mask.", validator=non_empty_list,
            group="MaskField",
        )).define(ConfigKey("replacement", ConfigType.STRING, "Replacement.", default=None))

    def configure(self, configs: Mapping[str, str]) -> None:
        if configs.get("replacement") == "refused":
            raise ValueError("replacement 'refused' cannot be honoured")
        self.configs = dict(configs)

    def apply(self, record: Any) -> Any:
        return record

    def close(self) -> None:
        CLOSED.append("MaskValue")


class MaskKey(MaskValue):
    pass


class FlattenValue(MaskValue):
    pass


class FlattenKey(MaskValue):
    pass


class Filter(Transformation[Any]):
    def apply(self, record: Any) -> Any:
        return None


class BrokenTransformation(Transformation[Any]):
    def __init__(self) -> None:
        raise RuntimeError("no constructor today")

    def apply(self, record: Any) -> Any:
        return record


class RecordIsTombstone(Predicate[Any]):
    def test(self, record: Any) -> bool:
        return record.value is None

    def close(self) -> None:
        CLOSED.append("RecordIsTombstone")


class HasHeaderKey(Predicate[Any]):
    def __init__(self) -> None:
        self.configs: dict[str, str] = {}

    def config_def(self) -> ConfigDef:
        return ConfigDef().define(ConfigKey("name", ConfigType.STRING, "Header name."))

    def configure(self, configs: Mapping[str, str]) -> None:
        self.configs = dict(configs)

    def test(self, record: Any) -> bool:
        return True


T = "org.apache.kafka.connect.transforms."
JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
SIMPLE = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
BUILTINS: dict[str, type] = {
    JSON: JsonLikeConverter,
    STRING: StringLikeConverter,
    SIMPLE: SimpleLikeHeaderConverter,
    f"{T}MaskField$Value": MaskValue,
    f"{T}MaskField$Key": MaskKey,
    f"{T}Flatten$Value": FlattenValue,
    f"{T}Flatten$Key": FlattenKey,
    f"{T}Filter": Filter,
    f"{T}Broken": BrokenTransformation,
    f"{T}predicates.RecordIsTombstone": RecordIsTombstone,
    f"{T}predicates.HasHeaderKey": HasHeaderKey,
}


def _plugins(**kwargs: Any) -> Plugins:
    return Plugins(pipeline_builtins=lambda: BUILTINS, **kwargs)


@pytest.fixture
def plugins() -> Plugins:
    return _plugins()


@pytest.fixture
def validator(plugins: Plugins) -> ConfigValidator:
    return ConfigValidator(plugins, max_tasks=8)


@pytest.fixture(autouse=True)
def _forget_closed() -> Iterator[None]:
    CLOSED.clear()
    yield
    CLOSED.clear()


def _source(**extra: str) -> dict[str, str]:
    return {"name": "src", "connector.class": "FileStreamSource", "file": "/tmp/in",
            "topic": "lines", **extra}


def _sink(**extra: str) -> dict[str, str]:
    return {"name": "snk", "connector.class": "FileStreamSink", "file": "/tmp/out",
            "topics": "lines", **extra}


def _errors(validator: ConfigValidator, config: dict[str, str]) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for key, message in validator.validate(config).all_errors():
        errors.setdefault(key, []).append(message)
    return errors


# --- resolution ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        (PluginKind.CONVERTER, JSON, JsonLikeConverter),
        (PluginKind.CONVERTER, "JsonConverter", JsonLikeConverter),
        (PluginKind.CONVERTER, "Json", JsonLikeConverter),
        (PluginKind.CONVERTER, "  String ", StringLikeConverter),
        (PluginKind.HEADER_CONVERTER, "JsonConverter", JsonLikeConverter),
        (PluginKind.HEADER_CONVERTER, "SimpleHeaderConverter", SimpleLikeHeaderConverter),
        (PluginKind.HEADER_CONVERTER, "Simple", SimpleLikeHeaderConverter),
        (PluginKind.TRANSFORMATION, f"{T}MaskField$Value", MaskValue),
        (PluginKind.TRANSFORMATION, "Filter", Filter),
        (PluginKind.PREDICATE, "RecordIsTombstone", RecordIsTombstone),
        (PluginKind.PREDICATE, "HasHeaderKey", HasHeaderKey),
        (PluginKind.TRANSFORMATION, f"{__name__}.MaskValue", MaskValue),
        (PluginKind.TRANSFORMATION, f"{__name__}:MaskValue", MaskValue),
    ],
)
def test_a_plugin_resolves_by_kafka_name_alias_and_python_path(
    plugins: Plugins, kind: PluginKind, name: str, expected: type
) -> None:
    assert plugins.pipeline.plugin_class(kind, name) is expected


def test_nested_variants_have_no_alias_since_key_and_value_are_everyones(plugins: Plugins) -> None:
    for name in ("Value", "Key", "MaskField$Value"):
        with pytest.raises(PluginClassError, match=r"could not be found\.$"):
            plugins.pipeline.plugin_class(PluginKind.TRANSFORMATION, name)


def test_the_abstract_kafka_name_of_an_smt_points_to_its_variants(plugins: Plugins) -> None:
    with pytest.raises(PluginClassError) as caught:
        plugins.pipeline.plugin_class(PluginKind.TRANSFORMATION, f"{T}MaskField")
    assert caught.value.message == (
        f"This class is abstract and cannot be created. Did you mean {T}MaskField$Key, "
        f"{T}MaskField$Value?"
    )


def test_a_class_of_another_kind_is_refused_with_kafkas_message(plugins: Plugins) -> None:
    with pytest.raises(PluginClassError) as caught:
        plugins.pipeline.plugin_class(PluginKind.CONVERTER, "Filter")
    assert caught.value.message == (
        f"Class class {__name__}.Filter does not implement the Converter interface"
    )
    assert not caught.value.about_value


def test_an_unknown_class_gets_kafkas_message(plugins: Plugins) -> None:
    with pytest.raises(PluginClassError) as caught:
        plugins.pipeline.plugin_class(PluginKind.TRANSFORMATION, "com.acme.Nope")
    assert caught.value.for_key("transforms.t.type", "com.acme.Nope") == (
        "Invalid value com.acme.Nope for configuration transforms.t.type: Class com.acme.Nope "
        "could not be found."
    )


def test_an_importable_class_outside_plugin_path_is_refused_before_import(
    plugins: Plugins,
) -> None:
    with pytest.raises(PluginClassError, match=r"neither a known plugin nor under plugin\.path"):
        plugins.pipeline.plugin_class(PluginKind.TRANSFORMATION, "json.JSONDecoder")


PLUGIN_MODULE = """
from connect_grpc.data.plugins import Transformation


class UpperCaseTransformation(Transformation):
    def apply(self, record):
        return record
"""


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("pp_"):
            del sys.modules[name]


def test_a_plugin_path_class_and_an_entry_point_resolve(plugin_dir: Path) -> None:
    (plugin_dir / "pp_smt.py").write_text(PLUGIN_MODULE)
    dist = plugin_dir / "pp_smt-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pp_smt\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[connect_grpc.transforms]\nupper = pp_smt:UpperCaseTransformation\n"
    )
    plugins = _plugins(plugin_path=(plugin_dir,))
    for name in ("upper", "UpperCase", "UpperCaseTransformation", "pp_smt.UpperCaseTransformation",
                 "pp_smt:UpperCaseTransformation"):
        cls = plugins.pipeline.plugin_class(PluginKind.TRANSFORMATION, name)
        assert cls.__name__ == "UpperCaseTransformation"
    listed = [d for d in plugins.describe_pipeline() if d.class_name.startswith("pp_smt.")]
    assert [(d.plugin_type, d.aliases) for d in listed] == [
        ("transformation", ("UpperCase", "UpperCaseTransformation", "upper"))
    ]


def test_describe_lists_pipeline_plugins_in_kafkas_type_order(plugins: Plugins) -> None:
    described = plugins.describe_pipeline(include_config_definitions=True)
    types = [d.plugin_type for d in described]
    assert types == sorted(types, key=["transformation", "predicate", "converter",
                                       "header_converter"].index)
    both = [d.plugin_type for d in described if d.class_name == JSON]
    assert both == ["converter", "header_converter"]
    (mask,) = [d for d in described if d.class_name == f"{T}MaskField$Value"]
    assert [key.name for key in mask.config_definitions] == ["fields", "replacement"]
    assert "Broken" not in " ".join(d.class_name for d in described)  # cannot be created


# --- ValidateConfig -------------------------------------------------------------------------


ISSUE_EXAMPLE = {
    "transforms": "mask",
    "transforms.mask.type": f"{T}MaskField$Value",
    "transforms.mask.fields": "ssn",
    "value.converter": JSON,
    "errors.tolerance": "all",
    "errors.deadletterqueue.topic.name": "dlq",
}


def test_the_issues_example_is_valid_and_every_key_is_defined(validator: ConfigValidator) -> None:
    infos = validator.validate(_source(**ISSUE_EXAMPLE))
    assert infos.all_errors() == []
    by_name = {info.value.name: info for info in infos.configs}
    for key in ISSUE_EXAMPLE:
        assert by_name[key].definition is not None, key
    mask_type = by_name["transforms.mask.type"].definition
    assert mask_type is not None
    assert (mask_type.group, mask_type.required, mask_type.display_name) == (
        "Transforms: mask", True, "Transformation type for mask"
    )
    for key in ("transforms.mask.predicate", "transforms.mask.negate", "transforms.mask.fields"):
        definition = by_name[key].definition
        assert definition is not None and definition.group == "Transforms: mask"
    assert by_name["value.converter.decimal.format"].definition is not None
    assert infos.groups[:4] == ("Common", "Transforms", "Predicates", "Error Handling")
    assert "Transforms: mask" in infos.groups


@pytest.mark.parametrize(
    ("key", "default", "type_"),
    [
        ("errors.retry.timeout", "0", "LONG"),
        ("errors.retry.delay.max.ms", "60000", "LONG"),
        ("errors.tolerance", "none", "STRING"),
        ("errors.log.enable", "false", "BOOLEAN"),
        ("errors.log.include.messages", "false", "BOOLEAN"),
        ("errors.deadletterqueue.topic.name", "", "STRING"),
        ("errors.deadletterqueue.topic.replication.factor", "3", "SHORT"),
        ("errors.deadletterqueue.context.headers.enable", "false", "BOOLEAN"),
        ("transforms", "", "LIST"),
        ("predicates", "", "LIST"),
        ("key.converter", None, "CLASS"),
        ("value.converter", None, "CLASS"),
        ("header.converter", None, "CLASS"),
    ],
)
def test_framework_keys_have_kafkas_types_and_defaults(
    validator: ConfigValidator, key: str, default: str | None, type_: str
) -> None:
    for config in (_source(), _sink()):
        (info,) = [i for i in validator.validate(config).configs if i.value.name == key]
        assert info.definition is not None
        assert (info.definition.type, info.definition.default_value) == (type_, default)


def test_an_unknown_transform_class_is_exactly_one_error(validator: ConfigValidator) -> None:
    config = _source(**{"transforms": "t", "transforms.t.type": "com.acme.Nope",
                        "transforms.t.fields": "x"})
    assert validator.validate(config).all_errors() == [(
        "transforms.t.type",
        "Invalid value com.acme.Nope for configuration transforms.t.type: Class com.acme.Nope "
        "could not be found.",
    )]


@pytest.mark.parametrize(
    ("extra", "key", "message"),
    [
        ({"transforms": "t"}, "transforms.t.type",
         'Missing required configuration "transforms.t.type" which has no default value.'),
        ({"transforms": "t", "transforms.t.type": "Filter", "transforms.t.negate": "true"},
         "transforms.t.type",
         "Config 'transforms.t.negate' was provided but there is no config "
         "'transforms.t.predicate' defining a predicate to be negated."),
        ({"transforms": "t", "transforms.t.type": "Filter", "transforms.t.predicate": "p"},
         "transforms.t.predicate",
         "Invalid value p for configuration transforms.t.predicate: Unknown configuration "
         "'predicates.p.type' (the predicate alias p is not listed in predicates)"),
        ({"transforms": "t,t", "transforms.t.type": "Filter"}, "transforms",
         "Invalid value [t, t] for configuration transforms: Duplicate alias provided."),
        ({"predicates": "p,p", "predicates.p.type": "RecordIsTombstone"}, "predicates",
         "Invalid value [p, p] for configuration predicates: Duplicate alias provided."),
        ({"predicates": "p", "predicates.p.type": "com.acme.P"}, "predicates.p.type",
         "Invalid value com.acme.P for configuration predicates.p.type: Class com.acme.P "
         "could not be found."),
        ({"predicates": "p", "predicates.p.type": "HasHeaderKey"}, "predicates.p.name",
         'Missing required configuration "predicates.p.name" which has no default value.'),
        ({"predicates": "p", "predicates.p.type": "Filter"}, "predicates.p.type",
         f"Class class {__name__}.Filter does not implement the Predicate interface"),
        ({"transforms": "t", "transforms.t.type": f"{T}MaskField"}, "transforms.t.type",
         f"This class is abstract and cannot be created. Did you mean {T}MaskField$Key, "
         f"{T}MaskField$Value?"),
        ({"transforms": "t", "transforms.t.type": f"{T}MaskField$Value"}, "transforms.t.fields",
         'Missing required configuration "transforms.t.fields" which has no default value.'),
        ({"transforms": "t", "transforms.t.type": "Filter", "transforms.t.predicate": "p",
          "transforms.t.negate": "maybe", "predicates": "p",
          "predicates.p.type": "RecordIsTombstone"}, "transforms.t.negate",
         "Invalid value maybe for configuration transforms.t.negate: Expected value to be "
         "either true or false"),
        ({"transforms": "t", "transforms.t.type": f"{T}Broken"}, "transforms.t.type",
         f"Invalid value class {__name__}.BrokenTransformation for configuration "
         "transforms.t.type: Error getting config definition from Transformation: no "
         "constructor today"),
        ({"transforms": "t", "transforms.t.type": f"{T}MaskField$Value",
          "transforms.t.fields": "a", "transforms.t.replacement": "refused"},
         "transforms.t.type",
         "The transformation 't' refused its configuration: replacement 'refused' cannot be "
         "honoured"),
        ({"value.converter": "com.acme.Conv"}, "value.converter",
         "Invalid value com.acme.Conv for configuration value.converter: Class com.acme.Conv "
         "could not be found."),
        ({"key.converter": "Filter"}, "key.converter",
         f"Class class {__name__}.Filter does not implement the Converter interface"),
        ({"header.converter": "RecordIsTombstone"}, "header.converter",
         f"Class class {__name__}.RecordIsTombstone does not implement the HeaderConverter "
         "interface"),
        ({"value.converter": "Json", "value.converter.decimal.format": "HEX"},
         "value.converter.decimal.format",
         "Invalid value HEX for configuration decimal.format: String must be one of: "
         "BASE64, NUMERIC"),
        ({"value.converter": "Json", "value.converter.schemas.enable": "yes"},
         "value.converter",
         "The value.converter refused its configuration: schemas.enable must be true or false"),
        ({"errors.tolerance": "ALL"}, "errors.tolerance",
         "Invalid value ALL for configuration errors.tolerance: String must be one of: "
         "none, all"),
        ({"errors.retry.timeout": "soon"}, "errors.retry.timeout",
         "Invalid value soon for configuration errors.retry.timeout: Not a number of type LONG"),
        ({"errors.deadletterqueue.topic.replication.factor": "40000"},
         "errors.deadletterqueue.topic.replication.factor",
         "Invalid value 40000 for configuration errors.deadletterqueue.topic.replication.factor: "
         "Not a number of type SHORT"),
        ({"errors.deadletterqueue.topic.name": "bad topic"}, "errors.deadletterqueue.topic.name",
         "Invalid value bad topic for configuration errors.deadletterqueue.topic.name: Topic "
         "name \"bad topic\" is illegal, it contains a character other than ASCII "
         "alphanumerics, '.', '_' and '-'"),
    ],
)
def test_each_refusal_is_on_its_key_with_kafkas_message(
    validator: ConfigValidator, extra: dict[str, str], key: str, message: str
) -> None:
    assert message in _errors(validator, _source(**extra)).get(key, []), _errors(
        validator, _source(**extra)
    )


@pytest.mark.parametrize(
    ("key", "extra", "plugin", "available"),
    [
        ("connector.plugin.version", {}, "connect_grpc.connectors.file.FileStreamSourceConnector",
         "0.1.0"),
        ("key.converter.plugin.version", {"key.converter": "StringConverter"},
         "org.apache.kafka.connect.storage.StringConverter", __version__),
        ("transforms.t.plugin.version",
         {"transforms": "t", "transforms.t.type": "org.apache.kafka.connect.transforms.Filter"},
         "org.apache.kafka.connect.transforms.Filter", __version__),
    ],
)
def test_kip_891_a_version_range_matching_nothing_is_refused_on_its_key(
    validator: ConfigValidator, key: str, extra: dict[str, str], plugin: str, available: str
) -> None:
    errors = _errors(validator, _source(**{key: "[1000.0,2000.0)", **extra}))
    assert errors[key] == [
        f"Plugin {plugin} not found that matches the version range [1000.0,2000.0), "
        f"available versions: [{available}]"
    ]
    assert not _errors(validator, _source(**{key: f"[{available}]", **extra}))
    assert _errors(validator, _source(**{key: "[1.0", **extra}))[key] == [
        "Unbounded range: [1.0"
    ]


def test_negate_without_predicate_still_defines_and_checks_the_plugins_keys(
    validator: ConfigValidator,
) -> None:
    config = _source(**{"transforms": "t", "transforms.t.type": f"{T}MaskField$Value",
                        "transforms.t.negate": "true"})
    infos = validator.validate(config)
    assert infos.all_errors() == [
        ("transforms.t.type", "Config 'transforms.t.negate' was provided but there is no "
         "config 'transforms.t.predicate' defining a predicate to be negated."),
        ("transforms.t.fields",
         'Missing required configuration "transforms.t.fields" which has no default value.'),
    ]
    defined = {i.value.name for i in infos.configs if i.definition is not None}
    assert {"transforms.t.negate", "transforms.t.fields"} <= defined


def test_converter_sub_keys_without_the_class_are_ignored(validator: ConfigValidator) -> None:
    config = _source(**{"value.converter.decimal.format": "HEX"})
    assert validator.validate(config).all_errors() == []


def test_unknown_keys_of_a_plugin_are_ignored_as_kafka_does(validator: ConfigValidator) -> None:
    config = _source(**ISSUE_EXAMPLE, **{"transforms.mask.no.such.key": "x",
                                         "transforms.other.type": "com.acme.Nope"})
    assert validator.validate(config).all_errors() == []


def test_a_valid_predicate_chain_passes(validator: ConfigValidator) -> None:
    config = _sink(**{
        "transforms": "dropTomb,mask", "transforms.dropTomb.type": f"{T}Filter",
        "transforms.dropTomb.predicate": "isTomb", "transforms.dropTomb.negate": "false",
        "transforms.mask.type": f"{T}MaskField$Value", "transforms.mask.fields": "a,b",
        "transforms.mask.predicate": "isTomb", "transforms.mask.negate": "true",
        "predicates": "isTomb", "predicates.isTomb.type": "RecordIsTombstone",
    })
    assert validator.validate(config).all_errors() == []


def test_a_sinks_dlq_topic_among_its_topics_is_refused(validator: ConfigValidator) -> None:
    errors = _errors(validator, _sink(**{"topics": "a, dlq", "errors.deadletterqueue.topic.name":
                                         " dlq "}))
    assert errors["topics"] == [
        "The DLQ topic 'dlq' may not be included in the list of topics ('topics=[a, dlq]') "
        "consumed by the connector"
    ]


def test_a_sinks_dlq_topic_matched_by_its_regex_is_refused(validator: ConfigValidator) -> None:
    config = _sink(**{"topics": "", "topics.regex": "d.*",
                      "errors.deadletterqueue.topic.name": "dlq"})
    assert _errors(validator, config)["topics.regex"] == [
        "The DLQ topic 'dlq' may not be matched by the regex for the topics "
        "('topics.regex=d.*') consumed by the connector"
    ]


def test_create_is_refused_with_kafkas_summary(validator: ConfigValidator) -> None:
    config = _source(**{"transforms": "t", "transforms.t.type": "com.acme.Nope",
                        "errors.tolerance": "sometimes"})
    with pytest.raises(InvalidArgumentError) as caught:
        validator.ensure_valid(config)
    assert caught.value.message.startswith(
        "Connector configuration is invalid and contains the following 2 error(s):\n"
    )
    assert "Class com.acme.Nope could not be found." in caught.value.message
    # Kafka Connect's last line points to its REST validate endpoint; ours to ValidateConfig.
    assert caught.value.message.endswith(
        "\nYou can also find the above list of errors by calling ValidateConfig "
        "(connect.v1.ConnectService/ValidateConfig) with this configuration"
    )


def test_validation_closes_the_plugins_it_probes(validator: ConfigValidator) -> None:
    validator.validate(_source(**ISSUE_EXAMPLE))
    assert sorted(CLOSED) == ["JsonLikeConverter", "MaskValue"]


# --- build_pipeline -------------------------------------------------------------------------


def _worker(**props: str) -> WorkerConfig:
    return WorkerConfig.from_properties({"bootstrap.servers": "localhost:9092", **props})


def test_no_converter_and_no_transform_is_pass_through(plugins: Plugins) -> None:
    pipeline = build_pipeline(_source(), _worker(), plugins, is_sink=False)
    assert pipeline.is_pass_through()
    assert pipeline.errors == ErrorHandling(0, 60000, False, False, False, "", 3, False)


def test_the_issues_example_builds_its_plugins(plugins: Plugins) -> None:
    pipeline = build_pipeline(_source(**ISSUE_EXAMPLE), _worker(), plugins, is_sink=False)
    assert not pipeline.is_pass_through()
    assert isinstance(pipeline.value_converter, JsonLikeConverter)
    assert pipeline.value_converter.is_key is False
    assert pipeline.key_converter is None
    # Kafka Connect's worker default header converter, for a pipeline that is not pass-through
    assert isinstance(pipeline.header_converter, SimpleLikeHeaderConverter)
    assert pipeline.header_converter.configs == {"converter.type": "header"}
    (stage,) = pipeline.stages
    assert isinstance(stage.transformation, MaskValue)
    assert stage.transformation.configs == {"type": f"{T}MaskField$Value", "fields": "ssn"}
    assert (stage.alias, stage.predicate, stage.negate) == ("mask", None, False)
    assert pipeline.errors.tolerate_all and pipeline.errors.dlq_topic == "dlq"
    pipeline.close()
    assert sorted(CLOSED) == ["JsonLikeConverter", "MaskValue"]


def test_the_connectors_converter_gets_only_the_connectors_sub_keys(plugins: Plugins) -> None:
    worker = _worker(**{"value.converter": "String", "value.converter.decimal.format": "NUMERIC",
                        "value.converter.from.worker": "yes"})
    config = _source(**{"value.converter": "Json", "value.converter.schemas.enable": "false"})
    pipeline = build_pipeline(config, worker, plugins, is_sink=True)
    assert isinstance(pipeline.value_converter, JsonLikeConverter)
    assert not isinstance(pipeline.value_converter, StringLikeConverter)
    assert pipeline.value_converter.configs == {"schemas.enable": "false"}


def test_the_connectors_sub_keys_without_its_class_are_ignored(plugins: Plugins) -> None:
    worker = _worker(**{"key.converter": "String", "key.converter.from.worker": "yes"})
    config = _source(**{"key.converter.schemas.enable": "false"})
    pipeline = build_pipeline(config, worker, plugins, is_sink=False)
    assert isinstance(pipeline.key_converter, StringLikeConverter)
    assert pipeline.key_converter.configs == {"from.worker": "yes"}
    assert pipeline.key_converter.is_key is True


def test_a_header_converter_set_alone_is_not_pass_through(plugins: Plugins) -> None:
    config = _source(**{"header.converter": "JsonConverter", "header.converter.x": "1"})
    pipeline = build_pipeline(config, _worker(), plugins, is_sink=False)
    assert isinstance(pipeline.header_converter, JsonLikeConverter)
    assert pipeline.header_converter.configs == {"x": "1", "converter.type": "header"}
    assert not pipeline.is_pass_through()


def test_a_predicate_and_negate_reach_the_stage(plugins: Plugins) -> None:
    config = _sink(**{
        "transforms": "t", "transforms.t.type": "Filter", "transforms.t.predicate": "hk",
        "transforms.t.negate": "TRUE", "predicates": "hk", "predicates.hk.type": "HasHeaderKey",
        "predicates.hk.name": "trace",
    })
    (stage,) = build_pipeline(config, _worker(), plugins, is_sink=True).stages
    assert isinstance(stage.predicate, HasHeaderKey)
    assert stage.predicate.configs == {"type": "HasHeaderKey", "name": "trace"}
    assert stage.negate is True


def test_an_undefined_predicate_fails_the_build_and_closes_what_was_made(
    plugins: Plugins,
) -> None:
    config = _sink(**{"transforms": "mask,t", "transforms.mask.type": f"{T}MaskField$Value",
                      "transforms.mask.fields": "a", "transforms.t.type": "Filter",
                      "transforms.t.predicate": "nope"})
    with pytest.raises(PipelineConfigError, match=r"Unknown configuration 'predicates.nope.type'"):
        build_pipeline(config, _worker(), plugins, is_sink=True)
    assert CLOSED == ["MaskValue"]


def test_an_unknown_converter_fails_the_build_with_kafkas_message(plugins: Plugins) -> None:
    with pytest.raises(PipelineConfigError) as caught:
        build_pipeline(_source(**{"value.converter": "Avro"}), _worker(), plugins, is_sink=False)
    assert str(caught.value).startswith(
        "Failed to find any class that implements Converter and which name matches Avro, "
        f"available converters are: {JSON}, {STRING}"
    )


def test_worker_converters_are_checked_at_start(plugins: Plugins) -> None:
    check_worker_converters(_worker(**{"value.converter": "Json"}), plugins)
    with pytest.raises(PipelineConfigError, match=r"worker property header\.converter"):
        check_worker_converters(_worker(**{"header.converter": "Nope"}), plugins)


@pytest.mark.parametrize(
    ("props", "field"),
    [
        ({"value.converter": "  "}, "value.converter"),
        ({"key.converter.plugin.version": "1.0"}, "key.converter.plugin.version"),
    ],
)
def test_worker_converter_properties_are_refused_when_unusable(
    props: dict[str, str], field: str
) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        _worker(**props)
    assert caught.value.violations[0].field == field


def test_worker_converter_properties_are_trimmed() -> None:
    worker = _worker(**{"value.converter": " Json ", "value.converter.schemas.enable": "false"})
    assert worker.converter_class("value.converter") == "Json"
    assert worker.converter_class("key.converter") is None
    assert worker.prefixed("value.converter.") == {"schemas.enable": "false"}


def test_list_plugins_adds_the_pipeline_plugins_only_when_asked(plugins: Plugins) -> None:
    herder = StandaloneHerder(_worker(), plugins, FileOffsetStore(Path("/nonexistent/offsets")))
    connectors = herder.plugins()
    assert {d.plugin_type for d in connectors} == {"source", "sink"}
    everything = herder.plugins(all_plugin_types=True)
    assert everything[: len(connectors)] == connectors
    assert [d.plugin_type for d in everything[len(connectors):]][:2] == [
        "transformation", "transformation"
    ]


# --- against the built-in transformations and predicates ------------------------------------


@pytest.fixture
def real_smts() -> Plugins:
    converters = {name: cls for name, cls in BUILTINS.items() if "transforms" not in name}
    return Plugins(pipeline_builtins=lambda: {
        **BUILTIN_TRANSFORMS, **BUILTIN_PREDICATES, **converters
    })


def test_the_builtins_have_kafkas_aliases_and_no_variant_alias(real_smts: Plugins) -> None:
    for alias in ("DropHeaders", "Filter", "InsertHeader", "RegexRouter", "TimestampRouter",
                  "ValueToKey", "HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"):
        assert real_smts.pipeline.canonical_name(alias) is not None, alias
    for name in ("Key", "Value", "Cast", "MaskField", "CastValue"):
        assert real_smts.pipeline.canonical_name(name) is None, name


def test_the_issues_example_is_valid_with_the_real_mask_field(real_smts: Plugins) -> None:
    validator = ConfigValidator(real_smts, max_tasks=8)
    assert validator.validate(_source(**ISSUE_EXAMPLE)).all_errors() == []
    pipeline = build_pipeline(_source(**ISSUE_EXAMPLE), _worker(), real_smts, is_sink=False)
    assert type(pipeline.stages[0].transformation).__name__ == "MaskFieldValue"
    pipeline.close()


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"transforms": "c", "transforms.c.type": f"{T}Cast$Value", "transforms.c.spec": "a:nope"},
         "transforms.c.spec"),
        ({"transforms": "r", "transforms.r.type": "RegexRouter",
          "transforms.r.replacement": "x"}, "transforms.r.regex"),
        ({"transforms": "f", "transforms.f.type": "Filter", "transforms.f.predicate": "p",
          "predicates": "p", "predicates.p.type": "TopicNameMatches"}, "predicates.p.pattern"),
    ],
)
def test_a_builtins_own_config_error_is_on_its_prefixed_key(
    real_smts: Plugins, extra: dict[str, str], key: str
) -> None:
    errors = _errors(ConfigValidator(real_smts, max_tasks=8), _source(**extra))
    assert list(errors) == [key]


def test_kafkas_abstract_cast_points_to_its_variants(real_smts: Plugins) -> None:
    errors = _errors(ConfigValidator(real_smts, max_tasks=8),
                     _source(**{"transforms": "c", "transforms.c.type": f"{T}Cast"}))
    assert errors == {"transforms.c.type": [
        f"This class is abstract and cannot be created. Did you mean {T}Cast$Key, {T}Cast$Value?"
    ]}


def test_a_worker_with_an_unusable_converter_does_not_start() -> None:
    worker = _worker(**{"value.converter": "com.acme.Nope",
                        "offset.storage.file.filename": "/nonexistent/offsets",
                        "listeners": "grpc://127.0.0.1:0"})
    with pytest.raises(StartupError) as caught:
        StandaloneProcess(worker)
    assert str(caught.value).startswith(
        "worker property value.converter: Failed to find any class that implements Converter "
        "and which name matches com.acme.Nope"
    )

"""ValidateConfig and CreateConnector over real gRPC know the record pipeline's keys: the
issue's example (a FileStreamSource with a MaskField$Value transformation, JsonConverter,
errors.tolerance=all and a dead-letter queue) validates with no error and every key
defined, and each broken variant is refused on its key with Kafka Connect's message, a
Create answering Kafka's "Connector configuration is invalid" summary."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import create, field_violations

MASK_VALUE = "org.apache.kafka.connect.transforms.MaskField$Value"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


def _issue_example(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "people.txt"),
        "topic": "people",
        "transforms": "mask",
        "transforms.mask.type": MASK_VALUE,
        "transforms.mask.fields": "ssn",
        "value.converter": JSON_CONVERTER,
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "dlq",
        **extra,
    }


def _validate(
    stub: pb_grpc.ConnectServiceStub, config: dict[str, str]
) -> pb.ValidateConfigResponse:
    return stub.ValidateConfig(pb.ValidateConfigRequest(config=config), timeout=60)


def _errors(response: pb.ValidateConfigResponse) -> dict[str, list[str]]:
    return {c.value.name: list(c.value.errors) for c in response.configs if c.value.errors}


def test_the_issues_example_validates_with_every_key_defined(
    stub: pb_grpc.ConnectServiceStub, tmp_path: Path
) -> None:
    config = _issue_example(tmp_path)
    response = _validate(stub, config)
    assert (response.error_count, _errors(response)) == (0, {})
    defined = {c.value.name: c.definition for c in response.configs if c.HasField("definition")}
    for key in config:
        assert key in defined, key
    assert defined["transforms.mask.type"].group == "Transforms: mask"
    assert defined["transforms.mask.fields"].group == "Transforms: mask"
    assert defined["errors.tolerance"].group == "Error Handling"
    assert "value.converter.schemas.enable" in defined
    assert list(response.groups[:4]) == ["Common", "Transforms", "Predicates", "Error Handling"]


@pytest.mark.parametrize(
    ("extra", "key", "message"),
    [
        ({"transforms.mask.type": "com.acme.Nope"}, "transforms.mask.type",
         "Invalid value com.acme.Nope for configuration transforms.mask.type: Class "
         "com.acme.Nope could not be found."),
        ({"transforms": "mask,extra"}, "transforms.extra.type",
         'Missing required configuration "transforms.extra.type" which has no default value.'),
        ({"transforms.mask.negate": "true"}, "transforms.mask.type",
         "Config 'transforms.mask.negate' was provided but there is no config "
         "'transforms.mask.predicate' defining a predicate to be negated."),
        ({"transforms.mask.predicate": "isTomb"}, "transforms.mask.predicate",
         "Invalid value isTomb for configuration transforms.mask.predicate: Unknown "
         "configuration 'predicates.isTomb.type' (the predicate alias isTomb is not listed in "
         "predicates)"),
        ({"predicates": "p", "predicates.p.type": "com.acme.Pred"}, "predicates.p.type",
         "Invalid value com.acme.Pred for configuration predicates.p.type: Class com.acme.Pred "
         "could not be found."),
        ({"value.converter": "com.acme.AvroConverter"}, "value.converter",
         "Invalid value com.acme.AvroConverter for configuration value.converter: Class "
         "com.acme.AvroConverter could not be found."),
        ({"errors.tolerance": "sometimes"}, "errors.tolerance",
         "Invalid value sometimes for configuration errors.tolerance: String must be one of: "
         "none, all"),
    ],
)
def test_each_refusal_is_on_its_key_and_create_answers_kafkas_summary(
    stub: pb_grpc.ConnectServiceStub, tmp_path: Path, name: str,
    extra: dict[str, str], key: str, message: str,
) -> None:
    config = _issue_example(tmp_path, **extra)
    response = _validate(stub, config)
    assert _errors(response) == {key: [message]}
    with pytest.raises(grpc.RpcError) as excinfo:
        create(stub, name, config)
    assert excinfo.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert (excinfo.value.details() or "").startswith(
        "Connector configuration is invalid and contains the following 1 error(s):\n"
    )
    assert field_violations(excinfo.value) == {f"config.{key}": message}
    listed = stub.ListConnectors(pb.ListConnectorsRequest(), timeout=30).connectors
    assert name not in [c.name for c in listed]


def test_list_plugins_names_the_pipeline_plugins_by_kafka_type(
    stub: pb_grpc.ConnectServiceStub,
) -> None:
    connectors = stub.ListPlugins(pb.ListPluginsRequest(), timeout=30).plugins
    assert {p.plugin_type for p in connectors} == {"source", "sink"}
    everything = stub.ListPlugins(pb.ListPluginsRequest(all_plugin_types=True), timeout=30).plugins
    by_type: dict[str, set[str]] = {}
    for plugin in everything:
        by_type.setdefault(plugin.plugin_type, set()).add(plugin.class_name)
    assert MASK_VALUE in by_type["transformation"]
    assert JSON_CONVERTER in by_type["converter"]
    assert JSON_CONVERTER in by_type["header_converter"]
    assert "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone" in by_type[
        "predicate"
    ]


def test_kafkas_smt_example_without_converters_is_refused_on_value_converter(
    stub: pb_grpc.ConnectServiceStub, tmp_path: Path
) -> None:
    """Kafka's documented SMT example (config/smt-file-source.properties) on a worker
    without converters (the shared one): each line would become a Struct that no converter
    writes, so ValidateConfig reports it and CreateConnector refuses it on value.converter;
    with the connector's own JsonConverter it is valid."""
    from connect_grpc.config.worker import read_properties

    shipped = Path(__file__).resolve().parents[2] / "config" / "smt-file-source.properties"
    config = {**read_properties(shipped), "name": f"smt-{tmp_path.name}"[:60],
              "file": str(tmp_path / "test.txt")}
    errors = _errors(_validate(stub, config))
    assert list(errors) == ["value.converter"], errors
    assert "makes every record's value a Struct" in errors["value.converter"][0]
    with pytest.raises(grpc.RpcError) as refused:
        create(stub, config["name"], config)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert list(field_violations(refused.value)) == ["config.value.converter"]
    assert _errors(_validate(stub, {**config, "value.converter": JSON_CONVERTER})) == {}

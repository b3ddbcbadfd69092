"""GetPluginConfig (KIP-769): one plugin of any type by class name or alias, described as
ListPlugins describes it, a connector's own keys first and then the framework's; NOT_FOUND
with the closest name (the standalone herder with a runtime stand-in, and the servicer over
an in-process gRPC server)."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from connect_grpc.api.servicer import ConnectServicer
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.domain import PluginDesc
from connect_grpc.kernel.errors import InvalidArgumentError, NotFoundError
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.unit.grpc_stubs import connect_stub


def _listed(herder: StandaloneHerder, class_name: str, plugin_type: str) -> PluginDesc:
    [found] = [
        plugin
        for plugin in herder.plugins(include_config_definitions=True, all_plugin_types=True)
        if plugin.class_name == class_name and plugin.plugin_type == plugin_type
    ]
    return found


def _keys(plugin: PluginDesc) -> list[str]:
    return [key.name for key in plugin.config_definitions]


def test_a_connector_has_its_own_keys_then_the_frameworks_it_does_not_define(
    herder: StandaloneHerder,
) -> None:
    plugin = herder.plugin_config("FileStreamSource")
    listed = _listed(herder, "connect_grpc.connectors.file.FileStreamSourceConnector", "source")
    own = _keys(listed)
    assert own == ["file", "topic", "batch.size"]
    keys = _keys(plugin)
    assert keys[: len(own)] == own
    framework = keys[len(own):]
    assert framework[:4] == ["name", "connector.class", "connector.plugin.version", "tasks.max"]
    assert {"transforms", "errors.tolerance", "exactly.once.support"} <= set(framework)
    assert "topics" not in framework  # a sink's key
    assert len(keys) == len(set(keys))
    assert (plugin.class_name, plugin.plugin_type, plugin.aliases) == (
        listed.class_name, "source", listed.aliases
    )


def test_a_sink_has_the_sinks_framework_keys(herder: StandaloneHerder) -> None:
    keys = _keys(herder.plugin_config("org.apache.kafka.connect.file.FileStreamSinkConnector"))
    assert {"topics", "topics.regex", "errors.deadletterqueue.topic.name"} <= set(keys)
    assert "exactly.once.support" not in keys


@pytest.mark.parametrize(
    ("name", "class_name", "plugin_type"),
    [
        ("org.apache.kafka.connect.transforms.Cast$Value",
         "org.apache.kafka.connect.transforms.Cast$Value", "transformation"),
        ("RegexRouter", "org.apache.kafka.connect.transforms.RegexRouter", "transformation"),
        ("TopicNameMatches", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
         "predicate"),
        ("JsonConverter", "org.apache.kafka.connect.json.JsonConverter", "converter"),
        ("SimpleHeaderConverter", "org.apache.kafka.connect.storage.SimpleHeaderConverter",
         "header_converter"),
    ],
)
def test_the_other_plugin_types_are_described_as_list_plugins_describes_them(
    herder: StandaloneHerder, name: str, class_name: str, plugin_type: str
) -> None:
    assert herder.plugin_config(name) == _listed(herder, class_name, plugin_type)


def test_a_transformations_keys_carry_their_definitions(herder: StandaloneHerder) -> None:
    [regex] = herder.plugin_config("RegexRouter").config_definitions[:1]
    assert (regex.name, regex.type, regex.required, regex.importance) == (
        "regex", "STRING", True, "HIGH"
    )
    assert regex.documentation


def test_an_unknown_plugin_is_not_found_naming_the_closest(herder: StandaloneHerder) -> None:
    with pytest.raises(NotFoundError) as close:
        herder.plugin_config("FileStreamSorce")
    assert close.value.message == "Unknown plugin FileStreamSorce. Did you mean FileStreamSource?"
    with pytest.raises(NotFoundError) as far:
        herder.plugin_config("zzzzzz")
    assert far.value.message == "Unknown plugin zzzzzz."


def test_an_empty_name_is_invalid(herder: StandaloneHerder) -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        herder.plugin_config("  ")
    assert excinfo.value.violations[0].field == "name"


@pytest.fixture
def stub(herder: StandaloneHerder) -> Iterator[pb_grpc.ConnectServiceStub]:
    with connect_stub(ConnectServicer(herder)) as stub:
        yield stub


@pytest.mark.timeout(30)
def test_the_rpc_answers_the_plugin_or_not_found(stub: pb_grpc.ConnectServiceStub) -> None:
    response = stub.GetPluginConfig(pb.GetPluginConfigRequest(name=" Filter "), timeout=10)
    assert response.plugin.class_name == "org.apache.kafka.connect.transforms.Filter"
    assert response.plugin.plugin_type == "transformation"
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.GetPluginConfig(pb.GetPluginConfigRequest(name="Fliter"), timeout=10)
    assert excinfo.value.code() == grpc.StatusCode.NOT_FOUND
    assert excinfo.value.details() == "Unknown plugin Fliter. Did you mean Filter?"


def test_list_plugins_lists_the_sink_connectors_then_the_source_connectors(
    herder: StandaloneHerder,
) -> None:
    """Kafka Connect's order of ``GET /connector-plugins`` (connectorsOnly=true)."""
    assert [(p.plugin_type, p.class_name) for p in herder.plugins()] == [
        ("sink", "connect_grpc.connectors.file.FileStreamSinkConnector"),
        ("sink", "connect_grpc.testing.plugins.InstrumentedSinkConnector"),
        ("source", "connect_grpc.connectors.file.FileStreamSourceConnector"),
        ("source", "connect_grpc.connectors.sequence.SequenceSourceConnector"),
        ("source", "connect_grpc.testing.plugins.InstrumentedSourceConnector"),
    ]

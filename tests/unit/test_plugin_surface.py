"""``connect_grpc.plugin`` is the plugin author's one import surface: it exports what its
``__all__`` says, each name the very object of the module that defines it, and the plugin
guide lists every one of them."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from connect_grpc import plugin

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "plugin-api.md"

#: Where each group of the surface is defined (its home keeps the same promise).
HOMES = (
    "connect_grpc.connectors.api",
    "connect_grpc.connectors.plugin_metrics",
    "connect_grpc.kernel.configdef",
    "connect_grpc.kernel.domain",
    "connect_grpc.data.errors",
    "connect_grpc.data.headers",
    "connect_grpc.data.logical",
    "connect_grpc.data.plugins",
    "connect_grpc.data.record",
    "connect_grpc.data.schema",
    "connect_grpc.data.struct",
)
#: Names the surface gives under another name than their home's.
ALIASES = {"SchemaType": "Type"}


def test_every_exported_name_exists_and_nothing_public_is_left_out() -> None:
    assert len(plugin.__all__) == len(set(plugin.__all__))
    for name in plugin.__all__:
        assert hasattr(plugin, name), name
    public = {name for name in vars(plugin) if not name.startswith("_") and name != "annotations"}
    assert public == set(plugin.__all__)


@pytest.mark.parametrize("name", sorted(plugin.__all__))
def test_an_exported_name_is_the_object_of_its_home(name: str) -> None:
    value = getattr(plugin, name)
    homes = [importlib.import_module(home) for home in HOMES]
    attribute = ALIASES.get(name, name)
    assert any(getattr(home, attribute, None) is value for home in homes), name


def test_the_guide_lists_every_exported_name() -> None:
    section = GUIDE.read_text(encoding="utf-8").split("## What a plugin may import", 1)[1]
    section = section.split("\n## ", 1)[0]
    listed = set(re.findall(r"`(\w+)`", section))
    assert set(plugin.__all__) <= listed, set(plugin.__all__) - listed


def test_the_surface_imports_without_a_deprecation_warning() -> None:
    subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", "import connect_grpc.plugin"],
        check=True,
        timeout=60,
    )


def test_every_kind_of_plugin_is_a_connect_plugin() -> None:
    """Kafka Connect's ``ConnectPlugin`` (KIP-1273): every plugin, whatever its kind, says
    its version and its keys; the pipeline plugins' bases answer the package's version and
    no keys by default, as Kafka's interfaces default to theirs."""
    from connect_grpc import __version__
    from connect_grpc.connectors.plugins import Plugins

    plugins = Plugins()
    for name, cls in plugins.pipeline.known().items():
        instance = cls()
        assert isinstance(instance, plugin.ConnectPlugin), name
        assert isinstance(instance.version(), str) and instance.version(), name
        assert isinstance(instance.config_def(), plugin.ConfigDef), name
    connector = plugins.new_connector("FileStreamSource")
    assert isinstance(connector, plugin.ConnectPlugin)

    class Bare(plugin.Transformation[plugin.ConnectRecord]):
        def apply(self, record: plugin.ConnectRecord) -> plugin.ConnectRecord:
            return record

    assert isinstance(Bare(), plugin.ConnectPlugin)
    assert Bare().version() == __version__
    assert Bare().config_def().describe() == []
    assert not isinstance(object(), plugin.ConnectPlugin)

"""What plugin authors import keeps working when it moves: the old names load, with a
deprecation warning naming the new home."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc import configdef
from connect_grpc.connectors.plugins import Plugins
from tests.unit.test_plugins import PLUGIN_MODULE

#: test_plugins' plugin module, importing ConfigDef from the deprecated module.
OLD_STYLE_PLUGIN = PLUGIN_MODULE.replace(
    "from connect_grpc.configdef import ConfigDef",
    "from connect_grpc.connectors.config import ConfigDef, ConfigType, Importance, define_all",
).format(name="OldStyleSinkConnector")
assert "connectors.config" in OLD_STYLE_PLUGIN


@pytest.fixture
def fresh_import(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The deprecated module and the test's plugin imported anew (the warning is given at
    import), and forgotten after."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("connect_grpc.connectors.config", "pp_old_style_plugin"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield
    for name in ("connect_grpc.connectors.config", "pp_old_style_plugin"):
        sys.modules.pop(name, None)


@pytest.mark.usefixtures("fresh_import")
def test_a_plugin_written_against_the_old_config_module_still_loads(tmp_path: Path) -> None:
    (tmp_path / "pp_old_style_plugin.py").write_text(OLD_STYLE_PLUGIN)
    with pytest.warns(DeprecationWarning, match="connect_grpc.configdef"):
        cls = Plugins(plugin_path=(tmp_path,)).connector_class(
            "pp_old_style_plugin.OldStyleSinkConnector"
        )
    assert isinstance(cls().config_def(), configdef.ConfigDef)


@pytest.mark.usefixtures("fresh_import")
def test_every_name_the_old_module_had_is_the_new_modules_own() -> None:
    with pytest.warns(DeprecationWarning):
        old = importlib.import_module("connect_grpc.connectors.config")
    for name in old.__all__:
        assert getattr(old, name) is getattr(configdef, name), name
    namespace: dict[str, object] = {}
    exec("from connect_grpc.connectors.config import *", namespace)
    assert namespace["ConfigDef"] is configdef.ConfigDef

"""What plugin authors import keeps working when it moves: the old names load, with a
deprecation warning naming the new home."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc.connectors.plugins import Plugins
from connect_grpc.kernel import configdef
from tests.unit.test_plugins import PLUGIN_MODULE

#: test_plugins' plugin module, importing ConfigDef from the deprecated module.
OLD_STYLE_PLUGIN = PLUGIN_MODULE.replace(
    "from connect_grpc.kernel.configdef import ConfigDef",
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
    with pytest.warns(DeprecationWarning, match="connect_grpc.kernel.configdef"):
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


#: Modules users import that moved into a package of their kind: (old path, new path).
MOVED = [
    ("connect_grpc.configdef", "connect_grpc.kernel.configdef"),
    ("connect_grpc.domain", "connect_grpc.kernel.domain"),
    ("connect_grpc.errors", "connect_grpc.kernel.errors"),
    ("connect_grpc.client_convert", "connect_grpc.client.convert"),
    ("connect_grpc.connection", "connect_grpc.client.connection"),
]


@pytest.mark.parametrize(("old_name", "new_name"), MOVED)
def test_a_moved_module_is_still_importable_from_its_old_path_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, old_name: str, new_name: str
) -> None:
    # The warning is given when the old module is first imported: import it anew.
    monkeypatch.delitem(sys.modules, old_name, raising=False)
    with pytest.warns(DeprecationWarning, match=new_name.replace(".", r"\.")):
        old = importlib.import_module(old_name)
    new = importlib.import_module(new_name)
    names = [name for name in vars(new) if not name.startswith("_")]
    assert names
    for name in names:
        assert getattr(old, name) is getattr(new, name), name
    # A name outside the new module's ``__all__`` too.
    private = next((name for name in vars(new) if name.startswith("_") and name[1] != "_"), None)
    if private is not None:
        assert getattr(old, private) is getattr(new, private)
    sys.modules.pop(old_name, None)

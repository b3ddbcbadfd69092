"""Plugin discovery: aliases, entry points, dotted paths, plugin.path directories, errors."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc.connectors.file import FileStreamSinkConnector, FileStreamSourceConnector
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.connectors.sequence import SequenceSourceConnector
from connect_grpc.kernel.domain import ConnectorType
from connect_grpc.kernel.errors import NotFoundError
from connect_grpc.testing.plugins import InstrumentedSinkConnector, InstrumentedSourceConnector

FILE_SOURCE = "connect_grpc.connectors.file.FileStreamSourceConnector"

PLUGIN_MODULE = """
from connect_grpc.connectors.api import SinkConnector
from connect_grpc.kernel.configdef import ConfigDef


class {name}(SinkConnector):
    def version(self):
        return "9.9"

    def config_def(self):
        return ConfigDef()

    def start(self, config):
        pass

    def task_class(self):
        raise NotImplementedError

    def task_configs(self, max_tasks):
        return []

    def stop(self, connector_deleted=False):
        pass
"""


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Restores sys.path, and forgets the plugin modules a test imported from its tmp_path
    (another test's plugin.path may hold a module of the same name)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("pp_"):
            del sys.modules[name]


def _write_plugin(directory: Path, module: str, class_name: str, entry_point: str = "") -> None:
    """A module with a sink connector class, and optionally a distribution declaring it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{module}.py").write_text(PLUGIN_MODULE.format(name=class_name))
    if entry_point:
        dist = directory / f"{module}-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text(
            f"[connect_grpc.connectors]\n{entry_point} = {module}:{class_name}\n"
        )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (FILE_SOURCE, FileStreamSourceConnector),
        ("connect_grpc.connectors.file:FileStreamSourceConnector", FileStreamSourceConnector),
        ("FileStreamSourceConnector", FileStreamSourceConnector),
        ("FileStreamSource", FileStreamSourceConnector),
        ("  FileStreamSink  ", FileStreamSinkConnector),
        ("org.apache.kafka.connect.file.FileStreamSourceConnector", FileStreamSourceConnector),
        ("org.apache.kafka.connect.file.FileStreamSinkConnector", FileStreamSinkConnector),
        ("SequenceSource", SequenceSourceConnector),
        ("InstrumentedSource", InstrumentedSourceConnector),
        ("connect_grpc.testing.plugins.InstrumentedSinkConnector", InstrumentedSinkConnector),
    ],
)
def test_builtins_resolve_by_every_alias(name: str, expected: type) -> None:
    assert Plugins(include_testing=True).connector_class(name) is expected


def test_canonical_name_and_type() -> None:
    plugins = Plugins()
    assert plugins.canonical_name("FileStreamSource") == FILE_SOURCE
    assert Plugins.connector_type(plugins.connector_class("FileStreamSink")) is ConnectorType.SINK
    assert Plugins.connector_type(SequenceSourceConnector) is ConnectorType.SOURCE


def test_new_connector_returns_fresh_instances() -> None:
    plugins = Plugins()
    first, second = plugins.new_connector("SequenceSource"), plugins.new_connector("SequenceSource")
    assert isinstance(first, SequenceSourceConnector)
    assert first is not second


def test_plugin_path_module_loads_by_dotted_path(tmp_path: Path) -> None:
    _write_plugin(tmp_path, "pp_dotted_plugin", "DottedSinkConnector")
    plugins = Plugins(plugin_path=(tmp_path,))
    cls = plugins.connector_class("pp_dotted_plugin.DottedSinkConnector")
    assert cls.__name__ == "DottedSinkConnector"
    assert Plugins.connector_type(cls) is ConnectorType.SINK
    assert str(tmp_path.resolve()) in sys.path
    with pytest.raises(NotFoundError):
        plugins.connector_class("DottedSinkConnector")  # not an entry point: no short alias


def test_entry_point_in_plugin_path_is_discovered_with_aliases(tmp_path: Path) -> None:
    _write_plugin(tmp_path, "pp_ep_plugin", "FancySinkConnector", entry_point="Fancy")
    plugins = Plugins(plugin_path=(tmp_path,))
    for alias in ("Fancy", "FancySink", "FancySinkConnector", "pp_ep_plugin.FancySinkConnector"):
        assert plugins.connector_class(alias).__name__ == "FancySinkConnector"
    (desc,) = [d for d in plugins.describe() if d.class_name == "pp_ep_plugin.FancySinkConnector"]
    assert desc.type is ConnectorType.SINK
    assert desc.version == "9.9"
    assert desc.aliases == ("Fancy", "FancySink", "FancySinkConnector")


def test_ambiguous_simple_names_are_dropped_but_full_names_work(tmp_path: Path) -> None:
    _write_plugin(tmp_path / "a", "pp_amb_a", "TwinConnector", entry_point="TwinA")
    _write_plugin(tmp_path / "b", "pp_amb_b", "TwinConnector", entry_point="TwinB")
    plugins = Plugins(plugin_path=(tmp_path / "a", tmp_path / "b"))
    with pytest.raises(NotFoundError):
        plugins.connector_class("TwinConnector")
    assert plugins.canonical_name("TwinA") == "pp_amb_a.TwinConnector"
    assert plugins.canonical_name("pp_amb_b.TwinConnector") == "pp_amb_b.TwinConnector"


def test_unknown_name_lists_the_available_connectors() -> None:
    with pytest.raises(NotFoundError) as caught:
        Plugins().connector_class("NoSuchConnector")
    message = caught.value.message
    assert "'NoSuchConnector'" in message
    assert "not a known alias" in message
    assert FILE_SOURCE in message


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("FileStreamSorce", "FileStreamSource"),
        ("filestreamsink", "FileStreamSink"),
        ("SequenceSourceConector", "SequenceSourceConnector"),
        ("org.apache.kafka.connect.file.FileStreamSinkConector",
         "org.apache.kafka.connect.file.FileStreamSinkConnector"),
    ],
)
def test_a_misspelt_name_gets_the_closest_known_name(typed: str, meant: str) -> None:
    with pytest.raises(NotFoundError) as caught:
        Plugins().connector_class(typed)
    message = caught.value.message
    assert f"did you mean {meant}?" in message
    assert repr(typed) in message


def test_unknown_name_lists_each_connector_with_its_short_aliases() -> None:
    with pytest.raises(NotFoundError) as caught:
        Plugins().connector_class("NoSuchThing")
    message = caught.value.message
    assert "did you mean" not in message
    assert (
        f"{FILE_SOURCE} (FileStreamSource, FileStreamSourceConnector, "
        "org.apache.kafka.connect.file.FileStreamSourceConnector)"
    ) in message
    assert "FileStreamSink, FileStreamSinkConnector" in message
    assert "SequenceSource, SequenceSourceConnector" in message


def test_a_refused_dotted_name_also_gets_the_closest_known_name() -> None:
    with pytest.raises(NotFoundError) as caught:
        Plugins().connector_class("connect_grpc.connectors.file.FileStreamSourceConector")
    message = caught.value.message
    assert "is not allowed" in message
    assert f"did you mean {FILE_SOURCE}?" in message


@pytest.mark.parametrize(
    "name",
    [
        "no_such_pkg_xyz.Connector",
        "connect_grpc.connectors.file.Nope",
        "collections.OrderedDict",
        "connect_grpc.connectors.api.SourceConnector",
        "connect_grpc.connectors.file:FileStreamSourceTask",
    ],
)
def test_a_class_that_is_not_a_registered_plugin_is_refused_naming_the_allowed_sources(
    name: str,
) -> None:
    with pytest.raises(NotFoundError) as caught:
        Plugins().new_connector(name)
    message = caught.value.message
    assert f"Connector class {name!r} is not allowed" in message
    assert "entry point of the group connect_grpc.connectors" in message
    assert "plugin.path directory (plugin.path: none: it is not set)" in message
    assert FILE_SOURCE in message


def test_test_plugins_by_dotted_path_are_refused_unless_enabled() -> None:
    with pytest.raises(NotFoundError, match="is not allowed"):
        Plugins().connector_class("connect_grpc.testing.plugins.InstrumentedSourceConnector")
    enabled = Plugins(include_testing=True)
    name = "connect_grpc.testing.plugins.InstrumentedSourceConnector"
    assert enabled.connector_class(name) is InstrumentedSourceConnector


def test_a_module_outside_plugin_path_is_refused_before_it_is_imported(tmp_path: Path) -> None:
    outside, plugin_dir = tmp_path / "outside", tmp_path / "plugins"
    plugin_dir.mkdir()
    outside.mkdir()
    marker = tmp_path / "imported"
    (outside / "pp_side_effect.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n" + PLUGIN_MODULE.format(name="SideConnector")
    )
    sys.path.append(str(outside))  # importable, but not under plugin.path
    plugins = Plugins(plugin_path=(plugin_dir,))
    with pytest.raises(NotFoundError) as caught:
        plugins.connector_class("pp_side_effect.SideConnector")
    assert "module pp_side_effect is not under plugin.path" in caught.value.message
    assert str(plugin_dir) in caught.value.message
    assert not marker.exists()


def test_a_class_a_plugin_path_module_imports_from_elsewhere_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pp_reexport.py").write_text(
        "from connect_grpc.connectors.file import FileStreamSinkConnector as Sink\n"
    )
    plugins = Plugins(plugin_path=(tmp_path,))
    with pytest.raises(NotFoundError, match=r"defined outside plugin\.path"):
        plugins.connector_class("pp_reexport.Sink")


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("no_such_pkg_xyz.Connector", "no module named 'no_such_pkg_xyz'"),
        ("pp_causes.Nope", "no attribute 'Nope'"),
        ("pp_causes.NotAConnector", "is not a subclass of connect_grpc.connectors.api.Connector"),
        ("pp_causes.Abstract", "is abstract"),
        ("", "not a known alias"),
    ],
)
def test_lookup_errors_in_plugin_path_name_the_cause(
    tmp_path: Path, name: str, cause: str
) -> None:
    (tmp_path / "pp_causes.py").write_text(
        "from connect_grpc.connectors.api import SourceConnector\n"
        "class NotAConnector:\n    pass\n"
        "class Abstract(SourceConnector):\n    pass\n"
    )
    with pytest.raises(NotFoundError, match=cause):
        Plugins(plugin_path=(tmp_path,)).new_connector(name)


def test_registered_classes_resolve_by_full_name_and_simple_aliases() -> None:
    plugins = Plugins(registered=(InstrumentedSinkConnector,))
    full = "connect_grpc.testing.plugins.InstrumentedSinkConnector"
    for name in (full, "InstrumentedSinkConnector", "InstrumentedSink"):
        assert plugins.connector_class(name) is InstrumentedSinkConnector
    assert full in {d.class_name for d in plugins.describe()}
    with pytest.raises(NotFoundError, match="is not allowed"):
        plugins.connector_class("connect_grpc.testing.plugins.InstrumentedSourceConnector")


def test_import_error_inside_the_module_is_reported(tmp_path: Path) -> None:
    (tmp_path / "pp_broken_plugin.py").write_text("import not_installed_dependency_xyz\n")
    with pytest.raises(NotFoundError, match="not_installed_dependency_xyz") as caught:
        Plugins(plugin_path=(tmp_path,)).connector_class("pp_broken_plugin.BrokenConnector")
    assert "importing pp_broken_plugin failed" in caught.value.message


def test_constructor_failure_is_reported(tmp_path: Path) -> None:
    (tmp_path / "pp_ctor_plugin.py").write_text(
        PLUGIN_MODULE.format(name="CtorConnector")
        + "\n    def __init__(self):\n        raise RuntimeError('boom')\n"
    )
    plugins = Plugins(plugin_path=(tmp_path,))
    with pytest.raises(NotFoundError, match=r"Failed to instantiate .*boom"):
        plugins.new_connector("pp_ctor_plugin.CtorConnector")


def test_describe_lists_builtins_sorted_with_aliases() -> None:
    descs = Plugins(include_testing=True).describe()
    names = [d.class_name for d in descs]
    assert names == sorted(names)
    by_name = {d.class_name: d for d in descs}
    source = by_name[FILE_SOURCE]
    assert source.type is ConnectorType.SOURCE
    assert {"FileStreamSource", "FileStreamSourceConnector",
            "org.apache.kafka.connect.file.FileStreamSourceConnector"} <= set(source.aliases)
    assert source.config_definitions == ()
    assert by_name["connect_grpc.testing.plugins.InstrumentedSinkConnector"].type is (
        ConnectorType.SINK
    )
    assert "connect_grpc.connectors.sequence.SequenceSourceConnector" in by_name


def test_test_plugins_are_hidden_unless_enabled() -> None:
    plugins = Plugins()
    listed = {d.class_name for d in plugins.describe()}
    assert not any(name.startswith("connect_grpc.testing.") for name in listed)
    assert "connect_grpc.connectors.sequence.SequenceSourceConnector" in listed
    with pytest.raises(NotFoundError) as caught:
        plugins.connector_class("InstrumentedSource")
    assert "connect_grpc.testing" not in caught.value.message
    enabled = Plugins(include_testing=True)
    with pytest.raises(NotFoundError) as listed_when_enabled:
        enabled.connector_class("NoSuchConnector")
    assert "connect_grpc.testing.plugins.InstrumentedSourceConnector" in (
        listed_when_enabled.value.message
    )


def test_describe_can_include_config_definitions() -> None:
    by_name = {d.class_name: d for d in Plugins().describe(include_config_definitions=True)}
    keys = {k.name: k for k in by_name[FILE_SOURCE].config_definitions}
    assert set(keys) == {"file", "topic", "batch.size"}
    assert keys["topic"].required
    assert keys["batch.size"].default_value == "2000"



def test_a_routed_registry_pickles_without_its_router() -> None:
    """A hosted Python task's pipeline factory pickles the registry; a worker with Java
    plugins routes names through a router holding the JVM's handles, which stays behind."""
    import pickle
    import threading

    class Router:
        def __init__(self) -> None:
            self.lock = threading.Lock()

        def connector_class(self, name: str) -> None:
            return None

        def new_connector(self, name: str, version: str | None) -> None:
            return None

    plugins = Plugins()
    plugins.route_connectors(Router())
    copy = pickle.loads(pickle.dumps(plugins))
    assert copy.connector_class("FileStreamSink") is FileStreamSinkConnector
    assert plugins.connector_class("FileStreamSink") is FileStreamSinkConnector

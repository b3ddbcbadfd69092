"""Several versions of one plugin side by side (KIP-891): Maven's version ordering and
ranges, the choice among plugin.path directories, and the version in statuses."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc.connectors.pipeline_plugins import PluginKind
from connect_grpc.connectors.plugin_loading import ISOLATED_ROOT, import_object, qualified_name
from connect_grpc.connectors.plugin_versions import (
    NoMatchingVersionError,
    PluginVersion,
    VersionRange,
    VersionSpecError,
    select_version,
    version_requirement,
)
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.herder.validation import ConfigValidator
from connect_grpc.kernel.domain import InstanceStatus, State
from connect_grpc.runtime.hosting.serving import importable_name
from connect_grpc.storage.status_codec import decode_status, encode_status


@pytest.mark.parametrize(
    ("lower", "higher"),
    [("1.0", "1.1"), ("1.9", "1.10"), ("1.0-alpha", "1.0-beta"), ("1.0-rc1", "1.0"),
     ("1.0-SNAPSHOT", "1.0"), ("1.0", "1.0-sp1"), ("1.0", "1.0.1"), ("1.0.1-rc", "1.0.1")],
)
def test_versions_order_as_maven_orders_them(lower: str, higher: str) -> None:
    assert PluginVersion(lower) < PluginVersion(higher)
    assert not PluginVersion(higher) < PluginVersion(lower)


def test_trailing_zeros_do_not_count() -> None:
    assert PluginVersion("1.0") == PluginVersion("1") == PluginVersion("1.0.0")


@pytest.mark.parametrize(
    ("spec", "inside", "outside"),
    [
        ("[1.0,2.0)", ["1.0", "1.5", "1.99"], ["0.9", "2.0"]),
        ("(,1.5]", ["0.1", "1.5"], ["1.6"]),
        ("[2.0,)", ["2.0", "10"], ["1.9"]),
        ("(,1.0],[1.2,)", ["1.0", "1.2", "3"], ["1.1"]),
        ("1.2", ["1.2", "1.2.0"], ["1.3", "1.1"]),
        ("[1.2]", ["1.2"], ["1.3"]),
    ],
)
def test_a_version_value_is_a_hard_maven_range(
    spec: str, inside: list[str], outside: list[str]
) -> None:
    wanted = version_requirement(spec)
    assert wanted is not None
    for version in inside:
        assert wanted.contains(PluginVersion(version)), version
    for version in outside:
        assert not wanted.contains(PluginVersion(version)), version


def test_no_value_or_latest_asks_for_the_latest() -> None:
    assert version_requirement(None) is None
    assert version_requirement("latest") is None
    assert select_version("p", [("1.0", "a"), ("2.0", "b"), ("1.5", "c")], None) == ("2.0", "b")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("[1.0", "Unbounded range: [1.0"),
        ("[2.0,1.0]", "Range defies version ordering: [2.0,1.0]"),
        ("(1.0)", "Single version must be surrounded by []: (1.0)"),
        ("[1.0,2.0),[1.5,3.0)", "Ranges overlap: [1.0,2.0),[1.5,3.0)"),
    ],
)
def test_a_value_that_is_not_a_range_says_why_as_maven_does(spec: str, message: str) -> None:
    with pytest.raises(VersionSpecError, match=message.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)")):
        VersionRange.parse(spec)


def test_a_range_matching_nothing_is_kafkas_message() -> None:
    with pytest.raises(NoMatchingVersionError) as caught:
        select_version("p.C", [("2.0", 1), ("1.0", 2)], version_requirement("[3.0,4.0)"))
    assert caught.value.message == (
        "Plugin p.C not found that matches the version range [3.0,4.0), available versions: "
        "[1.0, 2.0]"
    )
    with pytest.raises(NoMatchingVersionError, match=r"version range \[1.5,1.5\]"):
        select_version("p.C", [("2.0", 1)], version_requirement("1.5"))


CONNECTOR_MODULE = '''
from connect_grpc.plugin import ConfigDef, SourceConnector, SourceTask
from .helper import VERSION


class VTask(SourceTask):
    def version(self):
        return VERSION

    def start(self, config):
        pass

    def poll(self, max_records):
        return []

    def stop(self, connector_deleted=False):
        pass


class VConnector(SourceConnector):
    def version(self):
        return VERSION

    def config_def(self):
        return ConfigDef()

    def start(self, config):
        pass

    def task_class(self):
        return VTask

    def task_configs(self, max_tasks):
        return [{}]

    def stop(self, connector_deleted=False):
        pass
'''

SMT_MODULE = '''
from connect_grpc.plugin import Transformation
from .helper import VERSION


class Tag(Transformation):
    def version(self):
        return VERSION

    def configure(self, configs):
        pass

    def apply(self, record):
        return record

    def close(self):
        pass
'''


@pytest.fixture
def two_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """``vplug`` 1.0.0 in one plugin.path directory and 2.0.0 in another."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    directories = []
    for version in ("1.0.0", "2.0.0"):
        package = tmp_path / f"v{version}" / "vplug"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "helper.py").write_text(f"VERSION = {version!r}\n")
        (package / "conn.py").write_text(CONNECTOR_MODULE)
        (package / "smt.py").write_text(SMT_MODULE)
        directories.append(package.parent)
    before = set(sys.modules)
    yield directories
    for name in set(sys.modules) - before:
        if name.startswith(("vplug", ISOLATED_ROOT)):
            del sys.modules[name]


def test_a_connector_in_two_directories_is_chosen_by_version(two_versions: list[Path]) -> None:
    plugins = Plugins(plugin_path=tuple(two_versions))
    name = "vplug.conn.VConnector"
    assert plugins.connector_versions(name) == ["1.0.0", "2.0.0"]
    assert plugins.new_connector(name).version() == "2.0.0"  # the latest by default
    old = plugins.new_connector(name, "[1.0,2.0)")
    assert old.version() == "1.0.0"
    assert old.task_class()().version() == "1.0.0"
    assert plugins.new_connector(name, "2.0.0").version() == "2.0.0"
    # each copy is listed by the name users write; a hosted task imports its own copy
    newest = plugins.connector_class(name)
    assert qualified_name(newest) == name
    hosted = importable_name(newest.task_class(newest()))
    assert hosted is not None and hosted.startswith(ISOLATED_ROOT)
    assert import_object(hosted) is newest.task_class(newest())
    with pytest.raises(NoMatchingVersionError, match=r"available versions: \[1.0.0, 2.0.0\]"):
        plugins.new_connector(name, "[3.0,)")


def test_a_transformation_in_two_directories_is_chosen_by_version(
    two_versions: list[Path],
) -> None:
    plugins = Plugins(plugin_path=tuple(two_versions))
    kind = PluginKind.TRANSFORMATION
    assert plugins.pipeline.plugin_class(kind, "vplug.smt.Tag")().version() == "2.0.0"
    assert plugins.pipeline.plugin_class(kind, "vplug.smt.Tag", "1.0.0")().version() == "1.0.0"


def test_validation_refuses_a_range_matching_nothing_on_its_key(
    two_versions: list[Path],
) -> None:
    validator = ConfigValidator(Plugins(plugin_path=tuple(two_versions)), max_tasks=4)
    config = {"name": "v", "connector.class": "vplug.conn.VConnector", "topic": "t"}
    refused = {
        key: message
        for key, message in validator.validate(
            {**config, "connector.plugin.version": "[5.0,6.0)",
             "transforms": "t", "transforms.t.type": "vplug.smt.Tag",
             "transforms.t.plugin.version": "[1.0]"}
        ).all_errors()
    }
    assert refused == {
        "connector.plugin.version": "Plugin vplug.conn.VConnector not found that matches the "
        "version range [5.0,6.0), available versions: [1.0.0, 2.0.0]"
    }


def test_a_status_carries_the_version_to_kafka_and_back() -> None:
    status = InstanceStatus(State.RUNNING, "w1", version="1.2.3")
    raw = encode_status(status, 4)
    assert b'"version":"1.2.3"' in raw
    assert decode_status(raw) == (status, 4)
    assert decode_status(encode_status(InstanceStatus(State.RUNNING, "w1"), 4)) == (
        InstanceStatus(State.RUNNING, "w1"), 4
    )


def test_a_known_connector_has_its_one_version() -> None:
    plugins = Plugins()
    assert plugins.connector_versions("FileStreamSource") == ["0.1.0"]
    assert plugins.new_connector("FileStreamSource", "0.1.0").version() == "0.1.0"
    with pytest.raises(NoMatchingVersionError):
        plugins.new_connector("FileStreamSource", "[9,)")


def test_listing_shows_each_version_of_each_plugin_path_class(
    two_versions: list[Path],
) -> None:
    """ListPlugins lists the Python classes found on plugin.path, one entry a version, as
    Kafka Connect lists its plugins; the scan reads their sources, so a module that holds
    no plugin class is never imported."""
    (two_versions[0] / "boom.py").write_text("raise SystemExit('imported by the scan')\n")
    (two_versions[0] / "vplug" / "base.py").write_text(
        "import abc\nfrom connect_grpc.plugin import SourceConnector\n\n\n"
        "class Abstract(SourceConnector, abc.ABC):\n    pass\n\n\n"
        "class NotAPlugin:\n    pass\n"
    )
    plugins = Plugins(plugin_path=tuple(two_versions))
    listed = [(p.class_name, p.version, p.plugin_type) for p in plugins.describe()]
    assert ("vplug.conn.VConnector", "1.0.0", "source") in listed
    assert ("vplug.conn.VConnector", "2.0.0", "source") in listed
    assert listed.index(("vplug.conn.VConnector", "1.0.0", "source")) + 1 == listed.index(
        ("vplug.conn.VConnector", "2.0.0", "source"))
    assert not [name for name, _, _ in listed if name.startswith("vplug.base")]
    pipeline = [(p.class_name, p.version, p.plugin_type) for p in plugins.describe_pipeline()]
    assert [entry for entry in pipeline if entry[0] == "vplug.smt.Tag"] == [
        ("vplug.smt.Tag", "1.0.0", "transformation"), ("vplug.smt.Tag", "2.0.0", "transformation")
    ]
    assert "boom" not in sys.modules
    # the built-ins are listed as before, with their one version
    assert ("connect_grpc.connectors.file.FileStreamSourceConnector", "0.1.0", "source") in listed


@pytest.fixture
def plugins(two_versions: list[Path]) -> Plugins:
    """The ``herder`` fixture's plugins: ``vplug`` in its two versions on plugin.path."""
    return Plugins(plugin_path=tuple(two_versions))


def test_the_herder_lists_both_versions_and_describes_the_latest(
    herder: StandaloneHerder,
) -> None:
    listed = [(p.class_name, p.version) for p in herder.plugins()
              if p.class_name == "vplug.conn.VConnector"]
    assert listed == [("vplug.conn.VConnector", "1.0.0"), ("vplug.conn.VConnector", "2.0.0")]
    assert herder.plugin_config("vplug.conn.VConnector").version == "2.0.0"
    assert herder.plugin_config("vplug.smt.Tag").version == "2.0.0"

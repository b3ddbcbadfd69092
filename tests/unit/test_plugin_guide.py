"""docs/plugin-api.md works as written: its plugin files load from a plugin.path directory
and run as the page says, and its test passes."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from connect_grpc.connectors.api import SinkRecord, SinkTask, SourceConnector, SourceTask
from connect_grpc.connectors.pipeline_plugins import PluginKind
from connect_grpc.connectors.plugin_metrics import Monitorable
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.kernel.domain import ConnectorType
from connect_grpc.metrics.worker_metrics import WorkerMetrics
from connect_grpc.testing.plugins import FakeSourceTaskContext

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "plugin-api.md"
#: A ```python block whose first line names the file it is: ``# plugin.path/x.py`` or
#: ``# test_x.py``.
_BLOCK = re.compile(r"```python\n# (?P<name>[\w./]+\.py)\n(?P<body>.*?)```", re.DOTALL)
_MODULES = (
    "greetings", "greeting_log", "counting", "test_greetings", "test_greeting_pipeline"
)
#: The page's own test files.
_PAGE_TESTS = ("test_greetings", "test_greeting_pipeline")


def guide_files() -> dict[str, str]:
    return {match["name"]: match["body"] for match in _BLOCK.finditer(GUIDE.read_text())}


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The page's files written to a plugin.path directory (the test file beside them),
    their modules forgotten after."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name, body in guide_files().items():
        (tmp_path / Path(name).name).write_text(body)
    yield tmp_path
    for module in _MODULES:
        sys.modules.pop(module, None)


def test_every_python_block_of_the_page_is_a_named_file() -> None:
    blocks = GUIDE.read_text().count("```python")
    assert blocks == len(guide_files()) == 5


def test_the_counting_transformation_exports_what_it_saw(plugin_dir: Path) -> None:
    plugins = Plugins(plugin_path=(plugin_dir,))
    cls = plugins.pipeline.plugin_class(
        PluginKind.TRANSFORMATION, "counting.CountingTransformation"
    )
    counting = cls()
    assert isinstance(counting, Monitorable)
    metrics = WorkerMetrics()
    counting.with_plugin_metrics(metrics.plugins.open({"connector": "c"}, "c", None))
    counting.apply(object())
    counting.apply(object())
    scraped = generate_latest(metrics.registry).decode()
    assert 'connect_grpc_plugin_records_seen{connector="c"} 2.0' in scraped


def test_the_source_runs_and_resumes_after_its_offset(plugin_dir: Path) -> None:
    plugins = Plugins(plugin_path=(plugin_dir,))
    connector_class = plugins.connector_class("greetings.GreetingSourceConnector")
    assert Plugins.connector_type(connector_class) is ConnectorType.SOURCE
    connector = connector_class()
    assert isinstance(connector, SourceConnector)
    config = {"topic": "greetings", "names": "alice,bob"}
    assert connector.validate({"topic": "greetings"})["names"]  # required: an error
    assert not any(connector.validate(config).values())
    connector.start(config)
    [task_config] = connector.task_configs(4)
    task = connector.task_class()()
    assert isinstance(task, SourceTask)
    context = FakeSourceTaskContext()
    task.initialize(context)
    task.start(task_config)
    first = task.poll(3)
    assert [r.value for r in first] == ["hello, alice", "hello, bob", "hello, alice"]
    assert first[-1].source_offset == {"index": 2}
    task.stop()
    # a new task given the last committed offset goes on after it
    context.set_offset(first[-1].source_partition, first[-1].source_offset)
    again = connector.task_class()()
    assert isinstance(again, SourceTask)
    again.initialize(context)
    again.start(task_config)
    assert [r.source_offset for r in again.poll(1)] == [{"index": 3}]


def test_the_sink_writes_what_it_is_put_and_flushes(plugin_dir: Path) -> None:
    plugins = Plugins(plugin_path=(plugin_dir,))
    connector_class = plugins.connector_class("greeting_log.GreetingLogSinkConnector")
    assert Plugins.connector_type(connector_class) is ConnectorType.SINK
    connector = connector_class()
    output = plugin_dir / "greetings.log"
    connector.start({"file": str(output)})
    configs = connector.task_configs(2)
    assert len(configs) == 2
    task = connector.task_class()()
    assert isinstance(task, SinkTask)
    task.start(configs[0])
    task.put([SinkRecord("greetings", 0, 7, b"alice", b"hello, alice")])
    task.flush({("greetings", 0): 8})
    assert output.read_text() == "greetings/0: hello, alice\n"
    task.stop()


@pytest.mark.parametrize("module", _PAGE_TESTS)
def test_the_pages_own_tests_pass(plugin_dir: Path, module: str) -> None:
    sys.path.insert(0, str(plugin_dir))  # as pytest run in the plugin's directory has it
    page_tests = importlib.import_module(module)
    tests = [getattr(page_tests, name) for name in dir(page_tests) if name.startswith("test_")]
    assert tests
    for test in tests:
        test()

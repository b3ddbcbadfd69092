"""``connect-grpc standalone`` with its arguments swapped (a connector file where the worker
properties belong, or the reverse) says so and gives the expected order, instead of asking
for ``bootstrap.servers`` in a connector file. Uses the example files of ``config/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_grpc.cli import STANDALONE_USAGE, swapped_arguments_error
from connect_grpc.config.worker import read_properties

CONFIG = Path(__file__).resolve().parents[2] / "config"
WORKER = CONFIG / "worker-standalone.properties"
SOURCE_JSON = CONFIG / "file-source.json"
SINK_PROPERTIES = CONFIG / "file-sink.properties"


@pytest.mark.parametrize("connector", [SOURCE_JSON, SINK_PROPERTIES], ids=["json", "properties"])
def test_a_connector_file_given_as_the_worker_properties(connector: Path) -> None:
    error = swapped_arguments_error(connector, read_properties(connector), [WORKER])

    assert error is not None
    assert error.file == str(connector)
    assert "looks like a connector file" in error.message
    assert "arguments look swapped" in error.message
    assert STANDALONE_USAGE in error.fix
    assert error.exit_code == 2


def test_worker_properties_given_as_a_connector_file(tmp_path: Path) -> None:
    connector_as_worker = tmp_path / "worker.properties"
    connector_as_worker.write_text("listeners=grpc://127.0.0.1:8083\n")  # no bootstrap.servers

    error = swapped_arguments_error(
        connector_as_worker, read_properties(connector_as_worker), [SOURCE_JSON, WORKER]
    )

    assert error is not None
    assert error.file == str(WORKER)
    assert "looks like worker properties" in error.message
    assert STANDALONE_USAGE in error.fix


def test_arguments_in_the_right_order_pass() -> None:
    props = read_properties(WORKER)
    assert swapped_arguments_error(WORKER, props, [SOURCE_JSON, SINK_PROPERTIES]) is None
    assert swapped_arguments_error(WORKER, props, [Path("/nonexistent.properties")]) is None


def test_worker_properties_without_bootstrap_servers_are_not_called_swapped(
    tmp_path: Path,
) -> None:
    worker = tmp_path / "worker.properties"
    worker.write_text("listeners=grpc://127.0.0.1:8083\n")
    assert swapped_arguments_error(worker, read_properties(worker), [SOURCE_JSON]) is None

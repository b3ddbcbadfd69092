"""Unit-test fixtures: a standalone herder over the synchronous runtime stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.storage.file_offsets import FileOffsetStore
from tests.unit.fake_worker import FakeWorker


@pytest.fixture
def worker_holder() -> dict[str, FakeWorker]:
    return {}


@pytest.fixture
def plugins() -> Plugins:
    """The plugins of the ``herder`` fixture and its runtime; a test module overrides it to
    register connector classes of its own (``Plugins(registered=...)``)."""
    return Plugins(include_testing=True)


@pytest.fixture
def herder(
    tmp_path: Path, worker_holder: dict[str, FakeWorker], plugins: Plugins
) -> StandaloneHerder:
    config = WorkerConfig.from_properties(
        {"bootstrap.servers": "127.0.0.1:1", "listeners": "grpc://127.0.0.1:0",
         "worker.id": "w1"}
    )

    def make_runtime(board: object) -> FakeWorker:
        worker_holder["worker"] = FakeWorker(board, plugins)  # type: ignore[arg-type]
        return worker_holder["worker"]

    result = StandaloneHerder(
        config,
        plugins,
        FileOffsetStore(tmp_path / "offsets.json"),
        make_runtime,
    )
    result.start()
    return result

"""The config of the instrumented source connector (``connect_grpc.testing.plugins``) that
herder tests create, its events file under the test's ``tmp_path``."""

from __future__ import annotations

from pathlib import Path

SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"


def source_config(tmp_path: Path, tasks: int = 2, **extra: str) -> dict[str, str]:
    return {
        "connector.class": SOURCE,
        "tasks.max": str(tasks),
        "topic": "t",
        "test.events.file": str(tmp_path / "events.jsonl"),
        **extra,
    }

"""What ``connect-grpc ctl`` imports: the typed client, the generated stubs, click, rich and
its own modules, never the worker's side (its config, the cluster, Spark, Kafka clients, the
plugin API) nor structlog (which imports rich's tracebacks and pygments). Every ``ctl`` call
is a new process, and those imports were most of its start-up.

Checked in a fresh interpreter, since this test process has imported much more."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Modules (and their submodules) the ctl's path must not import.
NOT_IMPORTED = (
    "pyspark",
    "py4j",
    "confluent_kafka",
    "structlog",
    "pygments",
    "rich.traceback",
    "yaml",
    "connect_grpc.app",
    "connect_grpc.api.servicer",
    "connect_grpc.cluster",
    "connect_grpc.config.worker",
    "connect_grpc.config.override_policy",
    "connect_grpc.config_providers",
    "connect_grpc.connectors",
    "connect_grpc.data",
    "connect_grpc.herder",
    "connect_grpc.kafka.broker",
    "connect_grpc.logs.levels",
    "connect_grpc.logs.output",
    "connect_grpc.runtime",
    "connect_grpc.storage",
)

#: Runs the entry point as ``connect-grpc ctl ARGS`` would, then lists what got imported.
PROGRAM = """
import contextlib, io, json, sys
from connect_grpc.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(["ctl", *sys.argv[1:]])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imported_by_ctl(*args: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, timeout=120,
        check=True,
    )
    report = json.loads(result.stdout)
    assert report["code"] == 0
    modules: list[str] = report["modules"]
    return modules


@pytest.mark.parametrize("args", [("--help",), ("get", "--help"), ("apply", "--help")])
def test_ctl_imports_only_the_client_side(args: tuple[str, ...]) -> None:
    modules = _imported_by_ctl(*args)
    # what ctl is built on is there, so the absences below are not those of a failed import
    assert {"connect_grpc.client", "connect_grpc.ctl.root", "click", "rich.console"} <= set(
        modules
    )
    unwanted = [
        name
        for name in modules
        if any(name == banned or name.startswith(f"{banned}.") for banned in NOT_IMPORTED)
    ]
    assert unwanted == []

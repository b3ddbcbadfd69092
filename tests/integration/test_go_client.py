"""The Go client (clients/go) against a live worker.

- ``go test -count=1 -v ./...`` in clients/go, with ``CONNECT_GRPC_TARGET`` naming this
  module's worker, exits 0, and every test that ``go test -list`` finds passed (the example's
  ``TestExample`` among them): none failed, none skipped, none missing.
- The ``go -C clients/go run ./example`` command of docs/clients.md and of clients/go/README.md
  runs as written (only the address ``localhost:8083`` rewritten) and exits 0, having gone
  through every step of the example.
- Afterwards the worker has no connector left: the example and the tests delete theirs.
- Over TLS: tests/integration/test_go_client_tls.py.

The first run downloads the Go modules (from the Go module proxy) and builds gRPC, which
takes a minute or two; Go's build cache makes later runs quick.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from connect_grpc.testing.cluster import WorkerProcess
from connect_grpc.v1 import connect_pb2 as pb
from tests.documents import CLIENTS, commands, section_commands
from tests.integration.test_readme_commands import (
    Outcome,
    assert_as_documented,
    run_in_one_shell,
)
from tests.integration.warm_ups import warm_go_client

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
GO_MODULE = ROOT / "clients" / "go"
GO_README = GO_MODULE / "README.md"
#: docs/clients.md's section.
GO_SECTION = "## Go client"
TARGET_ENV = "CONNECT_GRPC_TARGET"
EXAMPLE_COMMAND = "go -C clients/go run ./example --target localhost:8083"
#: What the example prints for each step, with its default connector name.
EXAMPLE_STEPS = [
    "created go-example: STOPPED, offset seq=41",
    "offsets of go-example: seq=41",
    "altered offsets of go-example",
    "offsets of go-example: seq=9007199254740993",
    "previewed go-example's pipeline: 41 through ",
    "etag of go-example: ",
    "patched go-example: errors.tolerance=all, errors.log.enable removed (etag ",
    "stale etag ",
    "resumed go-example (etag ",
    "status of go-example: connector RUNNING, task 0 RUNNING",
    "topics of go-example: go-example",
    "deleted go-example",
]
GO_TIMEOUT = 600
#: What clients/go/README.md's TLS commands name, replaced by the test's files and worker.
DOCUMENTED_TLS_DIR = "/tmp/connect-tls"
DOCUMENTED_TOKENS_DIR = "/tmp/connect-tokens"
DOCUMENTED_TLS_ADDRESS = "localhost:8443"
#: The environment variables of example_test.go that stand for the example's TLS flags.
SECURITY_ENV = ("CONNECT_GRPC_CACERT", "CONNECT_GRPC_CERT", "CONNECT_GRPC_KEY",
                "CONNECT_GRPC_SERVER_NAME", "CONNECT_GRPC_TOKEN_FILE", "CONNECT_GRPC_TOKEN")


def _go() -> str:
    go = shutil.which("go")
    assert go is not None, "Go is needed for the Go client's tests (https://go.dev/dl/)"
    return go


def _go_in_module(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    warm_go_client()  # waits for the session's background build of the module, if under way
    return subprocess.run(
        [_go(), *args], cwd=GO_MODULE, env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=GO_TIMEOUT, check=False,
    )


def _listed_tests() -> set[str]:
    """The test functions of the module's packages, as ``go test -list`` finds them."""
    listed = _go_in_module(["test", "-list", ".", "./..."], dict(os.environ))
    assert listed.returncode == 0, listed.stdout + listed.stderr
    return set(re.findall(r"^(Test\w+)$", listed.stdout, re.M))


def _results(output: str) -> dict[str, str]:
    """Test name → PASS, FAIL or SKIP, from ``go test -v`` output (top-level tests)."""
    return dict(
        (name, result)
        for result, name in re.findall(r"^--- (PASS|FAIL|SKIP): (\w+) ", output, re.M)
    )


def _connector_names(worker: WorkerProcess) -> list[str]:
    listed = worker.stub.ListConnectors(pb.ListConnectorsRequest(), timeout=10)
    return [connector.name for connector in listed.connectors]


def test_go_tests_pass_against_a_live_worker(worker: WorkerProcess) -> None:
    expected = _listed_tests()
    assert {"TestExample", "TestCreateRepeatedWithItsRequestIDIsAnsweredOnce"} <= expected

    plaintext = {key: value for key, value in os.environ.items() if key not in SECURITY_ENV}
    run = _go_in_module(
        ["test", "-count=1", "-v", "./..."], {**plaintext, TARGET_ENV: worker.address}
    )

    output = run.stdout + run.stderr
    report = f"{output[-6000:]}\n\nworker log (tail):\n{worker.logs()[-4000:]}"
    assert run.returncode == 0, report
    results = _results(run.stdout)
    assert results == dict.fromkeys(expected, "PASS"), report
    assert _connector_names(worker) == []


def test_go_tests_fail_clearly_without_a_worker_address() -> None:
    env = {key: value for key, value in os.environ.items() if key != TARGET_ENV}

    run = _go_in_module(["test", "-count=1", "-v", "-run", "^TestExample$", "./example"], env)

    assert run.returncode != 0
    assert _results(run.stdout) == {"TestExample": "FAIL"}
    assert f"{TARGET_ENV} is not set" in run.stdout


def _assert_every_step(outcome: Outcome) -> None:
    printed = outcome.output.splitlines()
    steps = [next((i for i, line in enumerate(printed) if line.startswith(step)), -1)
             for step in EXAMPLE_STEPS]
    assert -1 not in steps and steps == sorted(steps), outcome.output


def test_readme_go_example_commands(worker: WorkerProcess, tmp_path: Path) -> None:
    chosen = [c for c in [*section_commands(CLIENTS, GO_SECTION), *commands(GO_README)]
              if c.words[:1] == ["go"] and DOCUMENTED_TLS_ADDRESS not in c.text]
    assert [c.text for c in chosen] == [EXAMPLE_COMMAND, EXAMPLE_COMMAND]

    outcomes = run_in_one_shell(chosen, worker.address, [], tmp_path, GO_TIMEOUT)

    assert_as_documented(outcomes, worker)
    for outcome in outcomes:
        _assert_every_step(outcome)
    assert _connector_names(worker) == []

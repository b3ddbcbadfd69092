"""The Go client (clients/go) against the TLS workers the security modules share
(tests/integration/tls_workers.py, certificates made at test time): against the mutual-TLS
worker and the TLS worker with tokens, ``go test -run TestExample`` (its TLS files and token
named by environment variables) and the TLS commands of clients/go/README.md (only the
documented files and address replaced) pass, and leave no connector behind.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from connect_grpc.testing.certs import Pki
from connect_grpc.testing.cluster import WorkerProcess
from tests.documents import commands
from tests.integration.test_go_client import (
    DOCUMENTED_TLS_ADDRESS,
    DOCUMENTED_TLS_DIR,
    DOCUMENTED_TOKENS_DIR,
    GO_README,
    GO_TIMEOUT,
    SECURITY_ENV,
    TARGET_ENV,
    _assert_every_step,
    _connector_names,
    _go_in_module,
    _results,
)
from tests.integration.test_readme_commands import assert_as_documented, run_in_one_shell
from tests.integration.tls_workers import ADMIN_TOKEN

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ops.token: the token worker's admin token, as README.md names it."""
    directory = tmp_path_factory.mktemp("tokens")
    (directory / "ops.token").write_text(ADMIN_TOKEN + "\n", encoding="ascii")
    return directory


@pytest.mark.parametrize("secured", ["mtls_worker", "token_worker"])
def test_go_example_against_a_tls_worker(
    secured: str, request: pytest.FixtureRequest, pki: Pki, tokens: Path,
    tmp_path: Path,
) -> None:
    worker: WorkerProcess = request.getfixturevalue(secured)
    with_token = secured == "token_worker"
    security = {"CONNECT_GRPC_CACERT": str(pki.ca.certificate)}
    if with_token:
        security["CONNECT_GRPC_TOKEN_FILE"] = str(tokens / "ops.token")
    else:
        security |= {"CONNECT_GRPC_CERT": str(pki.admin.certificate),
                     "CONNECT_GRPC_KEY": str(pki.admin.key)}
    env = {key: value for key, value in os.environ.items() if key not in SECURITY_ENV}

    run = _go_in_module(["test", "-count=1", "-v", "-run", "^TestExample$", "./example"],
                        {**env, TARGET_ENV: worker.address, **security})

    report = f"{(run.stdout + run.stderr)[-6000:]}\n\nworker log (tail):\n{worker.logs()[-4000:]}"
    assert run.returncode == 0 and _results(run.stdout) == {"TestExample": "PASS"}, report

    [documented] = [c for c in commands(GO_README) if c.words[:1] == ["go"]
                    and DOCUMENTED_TLS_ADDRESS in c.text
                    and ("--token-file" in c.text) == with_token]
    text = (documented.text.replace(DOCUMENTED_TLS_DIR, str(pki.ca.directory))
            .replace(DOCUMENTED_TOKENS_DIR, str(tokens))
            .replace(DOCUMENTED_TLS_ADDRESS, worker.address))
    [outcome] = run_in_one_shell([dataclasses.replace(documented, text=text)], "", [],
                                 tmp_path, GO_TIMEOUT)
    assert_as_documented([outcome], worker)
    _assert_every_step(outcome)
    assert _connector_names(worker) == []

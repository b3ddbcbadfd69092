"""docs/running.md's "Workers on a Spark standalone cluster" runs as written, twice: the recipe
(a Spark master and worker, a distributed worker on them, the file→topic→file pipeline through
an executor, its clean-up) then the block that stops the Spark master and worker, in one
shell. The second round starts everything again on the same ports and state (the topics, the
sink's consumer group, the files): so the first round's stop released them.

Only what names this machine's ports and paths is replaced: the broker address, the gRPC
listener, the Spark ports, ``/tmp/...`` paths (the test's own directory), and the internal
topics, data topic and group of the copies of the config files (made the test's own, the
same in both rounds).

The shell gets the JVM options the test session gives its Spark drivers
(``PYSPARK_SUBMIT_ARGS``: the C1 compiler only, the class-data archive of
``connect_grpc.testing.class_archive``) for the recipe's other JVMs too: the Spark master and
worker (``SPARK_DAEMON_JAVA_OPTS``, which ``spark-class`` reads for them) and the executors
(``spark.executor.defaultJavaOptions``). They change how much CPU those JVMs take to start
(the master's and worker's: 15-16 s → 6 s on the 2-core machine), not what they do.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import uuid
from pathlib import Path

import pytest

from connect_grpc.config.worker import read_properties
from connect_grpc.kafka.broker import DEFAULT_BROKER_PORT
from connect_grpc.kafka.ports import free_port
from connect_grpc.testing import class_archive
from tests.documents import ROOT, RUNNING, Command, section_commands
from tests.integration.test_readme_commands import Outcome, run_in_one_shell

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

SECTION = "## Workers on a Spark standalone cluster"
#: What the recipe writes, as documented.
WORKER_FILE = "config/worker-spark.properties"
CONNECTOR_FILES = ("config/file-source.json", "config/file-sink.properties")
DOCUMENTED_GRPC = "localhost:8095"
FILES_DIR = "/tmp/connect-local"
DATA_TOPIC = "connect-local"
CLUSTER = "connect-spark-cluster"


def _blocks() -> tuple[list[Command], list[Command]]:
    """The recipe's commands and the stop block's, in order."""
    chosen = section_commands(RUNNING, SECTION)
    blocks = sorted({c.block for c in chosen})
    assert len(blocks) == 2, blocks
    recipe = [c for c in chosen if c.block == blocks[0]]
    stop = [c for c in chosen if c.block == blocks[1]]
    return recipe, stop


def _copy(path: Path, target: Path, replacements: dict[str, str]) -> None:
    text = path.read_text(encoding="utf-8")
    for documented, actual in replacements.items():
        text = text.replace(documented, actual)
    target.write_text(text, encoding="utf-8")


def test_readme_spark_cluster_recipe_runs_twice(kafka_bootstrap: str, tmp_path: Path) -> None:
    recipe, stop = _blocks()
    texts = [c.text for c in recipe]
    assert any("mkdir -p /tmp/connect-local" in t for t in texts)  # the sink's directory
    assert sum("SPARK_LOCAL_IP=127.0.0.1 " in t for t in texts) == 3  # every process started
    assert not any(t.startswith("export ") for t in texts)
    assert stop[0].text.startswith("kill $SPARK_WORKER $SPARK_MASTER")

    run = uuid.uuid4().hex[:8]
    grpc_port, master_port, master_ui, worker_ui = (free_port() for _ in range(4))
    properties = read_properties(ROOT / WORKER_FILE)
    assert properties["bootstrap.servers"].endswith(f":{DEFAULT_BROKER_PORT}")
    assert properties["listeners"] == f"grpc://{DOCUMENTED_GRPC.replace('localhost', '127.0.0.1')}"
    assert properties["spark.master"] == "spark://127.0.0.1:7077"
    worker_copy = tmp_path / "worker-spark.properties"
    worker_copy.write_text("".join(
        f"{key}={value.replace(CLUSTER, f'{CLUSTER}-{run}')}\n" for key, value in {
            **properties,
            "bootstrap.servers": kafka_bootstrap,
            "listeners": f"grpc://127.0.0.1:{grpc_port}",
            "spark.master": f"spark://127.0.0.1:{master_port}",
        }.items()
    ), encoding="utf-8")
    files_dir = tmp_path / "local-files"  # not named like the topic, which is replaced too
    data_topic = f"{DATA_TOPIC}-{run}"
    replacements = {
        WORKER_FILE: str(worker_copy),
        "/tmp/connect-spark-worker.log": str(tmp_path / "connect-spark-worker.log"),
        "/tmp/spark-": f"{tmp_path}/spark-",
        DOCUMENTED_GRPC: f"127.0.0.1:{grpc_port}",
        "--port 7077": f"--port {master_port}",
        "127.0.0.1:7077": f"127.0.0.1:{master_port}",
        "--webui-port 8080": f"--webui-port {master_ui}",
        "127.0.0.1:8080": f"127.0.0.1:{master_ui}",
        "--webui-port 8081": f"--webui-port {worker_ui}",
    }
    for name in CONNECTOR_FILES:
        copy = tmp_path / Path(name).name
        _copy(ROOT / name, copy, {FILES_DIR: str(files_dir), DATA_TOPIC: data_topic})
        replacements[name] = str(copy)
    replacements[FILES_DIR] = str(files_dir)
    # nothing the recipe started outlives its stop (the shell's group is killed afterwards
    # in any case, which would hide it)
    leftovers = Command(
        f"! pgrep -fa -- '--webui-port ({master_ui}|{worker_ui})( |$)'", 0, -1
    )
    for round_ in (1, 2):
        outcomes = run_in_one_shell(
            [*recipe, *stop, leftovers], "unused", [Path(sys.executable).parent],
            tmp_path / f"shell-{round_}", 1200, replacements, _test_jvm_environment(),
        )
        _assert_as_documented(outcomes, tmp_path, round_)
        described = [o.output for o in outcomes if " describe connector " in o.command.text]
        assert len(described) == 2
        # spark.cores.max=1: one task hosted by the executor (once it registered: tasks that
        # start before run on the driver until then), the other on the driver
        for where in map(_runs_on, described):
            assert re.fullmatch(r"(driver|executor \S+) on \S+", where), described
        written = (files_dir / "input.txt").read_text(encoding="utf-8").splitlines()
        assert len(written) == round_
        assert (files_dir / "output.txt").read_text(encoding="utf-8").splitlines() == written


def _test_jvm_environment() -> dict[str, str]:
    """The session's JVM options for Spark drivers, for the daemons and the executors too
    (none when the session gives none, or the environment already names the daemons')."""
    submit = os.environ.get(class_archive.SUBMIT_ARGS_ENV, "")
    words = shlex.split(submit)
    prefix = f"{class_archive.DRIVER_OPTIONS_KEY}="
    options = next((w.removeprefix(prefix) for w in words if w.startswith(prefix)), "")
    if not options or os.environ.get("SPARK_DAEMON_JAVA_OPTS"):
        return {}
    executors = shlex.quote(f"spark.executor.defaultJavaOptions={options}")
    return {"SPARK_DAEMON_JAVA_OPTS": options,
            class_archive.SUBMIT_ARGS_ENV: f"--conf {executors} {submit}"}


def _runs_on(described: str) -> str:
    """The RUNS ON column of ``ctl describe connector``'s one task (``executor 0 on vm``)."""
    lines = described.splitlines()
    header = next(i for i, line in enumerate(lines) if line.strip().startswith("TASK "))
    column = lines[header].index("RUNS ON")
    end = lines[header].index("ERROR")
    return lines[header + 1][column:end].strip()


def _assert_as_documented(outcomes: list[Outcome], tmp_path: Path, round_: int) -> None:
    failed = [outcome.describe() for outcome in outcomes if outcome.problem() is not None]
    if not failed:
        return
    logs = "\n".join(
        f"{log.name} (tail):\n{log.read_text(errors='replace')[-3000:]}"
        for log in sorted(tmp_path.glob("*.log"))
    )
    pytest.fail(f"round {round_}: " + "\n\n".join(failed) + f"\n\n{logs}")

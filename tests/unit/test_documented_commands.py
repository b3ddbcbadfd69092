"""Every ```sh block of README.md and docs/ is claimed by a test that runs it.

:data:`CLAIMS` is the registry: for each block, by its document and the heading of the
section it sits in, the tests that run its commands as written (``path::function``). A new
block, or one moved under another heading, fails :func:`test_every_sh_block_is_claimed`
until the registry names its test; a claim whose section lost its block, whose test is gone
or whose test module does not name the section fails too.

Two kinds of blocks cannot run inside the suite, and are checked here instead: the ``make``
commands (each must name a target of the Makefile; ``make test`` is what CI runs, ``make
demo`` runs ``connect-grpc dev``, which tests/integration/test_dev_demo.py runs twice), and
docs/docker.md's (CI has no Docker daemon: its commands must be the compose file's own).
"""

from __future__ import annotations

import ast
import re
import shlex

import pytest
import yaml

from tests.documents import (
    DOCKER,
    README,
    ROOT,
    commands,
    documents,
    heading_above,
    section_commands,
    sh_blocks,
)

THIS = "tests/unit/test_documented_commands.py"
READMES = "tests/integration/test_readme_commands.py"
EXAMPLES = "tests/integration/test_readme_examples.py"
SECURITY_TESTS = "tests/integration/test_readme_security.py"

#: (document, heading of its section) → the tests that run the section's ```sh blocks.
CLAIMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("README.md", "# connect-grpc"): (
        "tests/integration/test_dev_demo.py::test_a_second_demo_run_copies_every_line_like_the_first",
        f"{THIS}::test_documented_make_commands_name_makefile_targets",
    ),
    ("README.md", "## By hand"): (
        f"{READMES}::test_readme_kafka_commands",
        f"{READMES}::test_readme_standalone_command",
        f"{THIS}::test_documented_make_commands_name_makefile_targets",
    ),
    ("docs/running.md", "## Where the data lives"): (f"{READMES}::test_readme_kafka_commands",),
    ("docs/running.md", "## Standalone mode"): (
        f"{READMES}::test_readme_kafka_commands",
        f"{READMES}::test_readme_standalone_command",
        f"{THIS}::test_documented_make_commands_name_makefile_targets",
    ),
    ("docs/running.md", "## Distributed mode"): (f"{READMES}::test_readme_distributed_block",),
    ("docs/running.md", "## Workers on a Spark standalone cluster"): (
        "tests/integration/test_readme_spark_cluster.py"
        "::test_readme_spark_cluster_recipe_runs_twice",
    ),
    ("docs/pipeline.md", "## A record pipeline, as Kafka Connect users write it"): (
        f"{READMES}::test_readme_record_pipeline_block",
    ),
    ("docs/pipeline.md", "## Kafka's transformation example"): (
        f"{EXAMPLES}::test_readme_kafka_smt_example_and_its_preview",
    ),
    ("docs/connectors.md", "## Topic creation by source connectors"): (
        f"{EXAMPLES}::test_readme_topic_creation_block",
    ),
    ("docs/operations.md", "## Pipeline preview"): (
        f"{EXAMPLES}::test_readme_kafka_smt_example_and_its_preview",
    ),
    ("docs/security.md", "## TLS and mutual TLS"): (f"{SECURITY_TESTS}::test_readme_mtls_set_up",),
    ("docs/security.md", "## Bearer tokens and roles"): (
        f"{SECURITY_TESTS}::test_readme_token_set_up",
    ),
    ("docs/security.md", "## Config providers"): (
        "tests/integration/test_secrets.py::test_the_readme_security_example",
    ),
    ("docs/ctl.md", "# Command line: `connect-grpc ctl`"): (
        "tests/integration/test_ctl.py::test_readme_examples_run_as_written",
    ),
    ("docs/ctl.md", "## ctl over TLS and with tokens"): (
        "tests/integration/test_ctl_tls.py::test_readme_examples_run_as_written",
    ),
    ("docs/ctl.md", "## Desired state from a directory"): (
        "tests/integration/test_ctl_apply.py"
        "::test_the_worked_example_of_the_docs_runs_as_written_twice",
    ),
    ("docs/clients.md", "## gRPC API"): (f"{READMES}::test_readme_grpcurl_commands",),
    ("docs/clients.md", "## Go client"): (
        "tests/integration/test_go_client.py::test_readme_go_example_commands",
    ),
    ("docs/metrics.md", "## Scraping a worker"): (
        "tests/integration/test_metrics.py::test_readme_metrics_example",
    ),
    ("docs/debezium.md", "## The walk-through"): (
        "tests/integration/test_debezium_walkthrough.py"
        "::test_the_debezium_walkthrough_runs_as_written_twice",
    ),
    ("docs/debezium.md", "## On a standalone worker"): (
        "tests/integration/test_debezium_standalone.py"
        "::test_debezium_on_a_standalone_worker_runs_as_written_twice",
    ),
    ("docs/docker.md", "# Docker"): (f"{THIS}::test_the_docker_page_runs_the_compose_file",),
    ("docs/docker.md", "## Kafka Connect's Java plugins"): (
        f"{THIS}::test_the_docker_pages_java_plugins_are_the_images_own",
    ),
    ("docs/development.md", "# Development"): (
        f"{THIS}::test_documented_make_commands_name_makefile_targets",
    ),
}


def _blocks() -> list[tuple[str, str, int]]:
    """(document, heading above it, line) of every ```sh block of README.md and docs/."""
    found = []
    for document in documents():
        for first_line, _ in sh_blocks(document):
            shown = document.relative_to(ROOT).as_posix()
            found.append((shown, heading_above(document, first_line - 1), first_line - 1))
    return found


def test_every_sh_block_is_claimed() -> None:
    unclaimed = [f"{document}:{line} (under {heading!r})"
                 for document, heading, line in _blocks() if (document, heading) not in CLAIMS]
    assert not unclaimed, (
        "```sh blocks no test runs: add the test, and the block to CLAIMS in "
        f"{THIS}:\n" + "\n".join(unclaimed))


@pytest.mark.parametrize(("document", "heading"), sorted(CLAIMS))
def test_every_claim_names_a_block_and_tests_that_read_it(document: str, heading: str) -> None:
    assert (document, heading) in {(d, h) for d, h, _ in _blocks()}, (
        f"{document} has no ```sh block right under {heading!r}")
    for test in CLAIMS[document, heading]:
        path, _, function = test.partition("::")
        module = ROOT / path
        assert module.is_file(), test
        source = module.read_text(encoding="utf-8")
        defined = {node.name for node in ast.parse(source).body
                   if isinstance(node, ast.FunctionDef)}
        assert function in defined, f"{path} defines no {function}"
        title = heading.lstrip("#").strip()
        assert title in source, f"{path} does not name the section {heading!r} of {document}"


def _makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z0-9_.-]+):(?!=)", text, flags=re.MULTILINE))


def test_documented_make_commands_name_makefile_targets() -> None:
    """What README.md and the guide tell users to ``make`` exists."""
    targets = _makefile_targets()
    made = [(document, command.text) for document in documents()
            for command in commands(document) if command.words[:1] == ["make"]]
    assert any(text.startswith("make demo") for _, text in made)
    for document, text in made:
        goals = [word for word in shlex.split(text, comments=True)[1:]
                 if "=" not in word and not word.startswith("-")]
        missing = [goal for goal in goals if goal not in targets]
        assert goals and not missing, f"{document.name}: {text!r} names no Makefile target"


def test_the_docker_page_runs_the_compose_file() -> None:
    """docs/docker.md's commands are those the compose file's own header gives, and the
    ports, worker files and group it names are the compose file's."""
    compose_file = ROOT / "docker-compose.yml"
    header = [line.lstrip("#").strip() for line in
              compose_file.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    java_section = section_commands(DOCKER, "## Kafka Connect's Java plugins")
    documented = [command for command in section_commands(DOCKER, "# Docker")
                  if command not in java_section]
    assert [c.text for c in documented] == [
        "docker compose up --build",
        "grpcurl -plaintext localhost:8083 connect.v1.ConnectService/GetClusterInfo",
    ]
    for command in documented:
        assert command.text in header, command.text
    compose = yaml.safe_load(compose_file.read_text(encoding="utf-8"))
    workers = {name: service for name, service in compose["services"].items()
               if name.startswith("worker-")}
    assert sorted(port for service in workers.values() for port in service["ports"]) == [
        f"127.0.0.1:{port}:8083" for port in (8083, 8084, 8085)]
    page = DOCKER.read_text(encoding="utf-8")
    assert "on host ports 8083, 8084 and 8085" in " ".join(page.split())
    for index in (1, 2, 3):
        properties = ROOT / "config" / f"worker-docker-{index}.properties"
        assert "group.id=connect-docker" in properties.read_text(encoding="utf-8").splitlines()
    assert all(
        any(volume.startswith(f"./config/worker-docker-{name[-1]}.properties:")
            for volume in service["volumes"])
        for name, service in workers.items())


def test_the_docker_pages_java_plugins_are_the_images_own() -> None:
    """docs/docker.md's Java plugin commands are those of the Dockerfile's own header; the
    image copies the JVM side's build where CONNECT_GRPC_JVM_TARGET says, makes /plugins,
    the plugin.path of every worker file it or the compose cluster runs, and dumps the
    class-data archive as its user."""
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    header = [line.lstrip("#").strip() for line in dockerfile.splitlines()
              if line.startswith("#")]
    documented = section_commands(DOCKER, "## Kafka Connect's Java plugins")
    assert [c.text for c in documented] == [
        "docker build -t connect-grpc .",
        "docker run --rm -p 8083:8083 -v /path/to/plugins:/plugins:ro connect-grpc "
        "standalone /config/worker.properties",
    ]
    for command in documented:
        assert command.text in header, command.text
    words = dockerfile.split()
    assert "CONNECT_GRPC_JVM_TARGET=/opt/connect-grpc-jvm" in words
    assert "COPY --from=jvm /out /opt/connect-grpc-jvm" in dockerfile
    assert "cp jvm/target/connect-grpc-jvm.jar /out/" in dockerfile
    assert "cp -r jvm/target/lib /out/lib" in dockerfile
    assert "/plugins" in words
    # the archive is dumped after USER: it lives in that user's cache, where its workers look
    assert dockerfile.index("USER 10001:10001") < dockerfile.index(
        "RUN python -m connect_grpc.runtime.class_archive")
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "proto" not in ignored and "jvm" not in ignored and "jvm/target" in ignored
    for name in ("worker-docker", *(f"worker-docker-{i}" for i in (1, 2, 3))):
        lines = (ROOT / "config" / f"{name}.properties").read_text(encoding="utf-8").splitlines()
        assert "plugin.path=/plugins" in lines, name


def test_the_readme_is_one_or_two_screens() -> None:
    """README.md says what the project is and where the guide is; the guide says the rest."""
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 100

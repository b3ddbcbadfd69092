"""Apache Kafka Connect's own JsonConverter (connect-json, connect-api, kafka-clients and
their Jackson jars of ``KAFKA_VERSION``), fetched from Maven Central with ``mvn`` into the
cache the way ``bench/kafka_connect.py`` fetches Kafka Connect, and a small Java program
(``JsonInterop.java``, compiled with ``javac`` into a temporary directory) that drives it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from connect_grpc.kafka.jars import KAFKA_VERSION, cache_root, fetch_maven_libs

ARTIFACTS = ("connect-json", "connect-api", "kafka-clients")
PROGRAM = Path(__file__).with_name("JsonInterop.java")

_POM = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by tests/interop/kafka_json.py: resolves Kafka Connect's JsonConverter jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.connect-grpc</groupId>
  <artifactId>kafka-connect-json-libs</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{dependencies}
  </dependencies>
</project>
"""


def render_pom(version: str = KAFKA_VERSION) -> str:
    dependencies = "\n".join(
        "    <dependency>\n"
        "      <groupId>org.apache.kafka</groupId>\n"
        f"      <artifactId>{artifact}</artifactId>\n"
        f"      <version>{version}</version>\n"
        "    </dependency>"
        for artifact in ARTIFACTS
    )
    return _POM.format(version=version, dependencies=dependencies)


def ensure_json_libs(version: str = KAFKA_VERSION) -> Path:
    """The directory of the jars, fetched once (a file lock serialises concurrent fetches)."""
    return fetch_maven_libs(
        cache_root() / "kafka-connect-json" / version,
        render_pom(version),
        [f"{artifact}-{version}.jar" for artifact in ARTIFACTS],
        f"Kafka Connect JSON {version}",
    )


def compile_program(libs: Path, out_dir: Path) -> str:
    """Compiles JsonInterop.java into ``out_dir``; returns the classpath to run it with."""
    classpath = f"{libs}/*"
    javac = shutil.which("javac") or "javac"
    subprocess.run(
        [javac, "-nowarn", "-cp", classpath, "-d", str(out_dir), str(PROGRAM)],
        check=True, capture_output=True, text=True, timeout=120,
    )
    return f"{out_dir}:{classpath}"


def run_program(classpath: str, mode: str, stdin: str, timeout: float = 120) -> str:
    """Runs JsonInterop in ``mode`` with ``stdin``; returns its stdout (raises on failure)."""
    java = shutil.which("java") or "java"
    result = subprocess.run(
        [java, "-cp", classpath, "JsonInterop", mode],
        input=stdin, capture_output=True, text=True, timeout=timeout, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"JsonInterop {mode} failed ({result.returncode}): {result.stderr}")
    return result.stdout

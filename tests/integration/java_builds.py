"""Small Java plugins that integration tests compile: sources built with ``javac`` against
Kafka's Connect API (the jars of jvm/'s build), laid out as a plugin directory of
``plugin.path`` (a jar with its ServiceLoader manifests, and the libraries it bundles); and
the distributed worker the Java modules run them on (:func:`java_worker`, :func:`running`)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from connect_grpc.java.jvm_build import jvm_target
from connect_grpc.java.plugin_jars import ensure_plugins
from connect_grpc.testing.cluster import WorkerProcess, cluster_properties

#: The ServiceLoader manifest of each kind of plugin the tests compile.
SOURCE_CONNECTOR = "org.apache.kafka.connect.source.SourceConnector"
SINK_CONNECTOR = "org.apache.kafka.connect.sink.SinkConnector"


def connect_api_classpath() -> list[Path]:
    """Kafka's Connect API and clients jars of jvm/'s build."""
    lib = jvm_target() / "lib"
    return [next(lib.glob(f"{prefix}-*.jar")) for prefix in ("connect-api", "kafka-clients")]


def build_plugin(
    work: Path,
    plugin_dir: Path,
    sources: Mapping[str, str],
    services: Mapping[str, Sequence[str]],
    libraries: Sequence[Path] = (),
) -> Path:
    """Compiles ``sources`` (path under the source root → text) against Kafka's Connect API
    and ``libraries`` into ``plugin_dir/<its name>.jar``, with a ServiceLoader manifest per
    entry of ``services`` (service → classes), and copies ``libraries`` beside it, as a
    plugin bundles its dependencies. ``work`` holds the build. Returns ``plugin_dir``."""
    source_root, classes = work / "src", work / "classes"
    for name, text in sources.items():
        (source_root / name).parent.mkdir(parents=True, exist_ok=True)
        (source_root / name).write_text(text, encoding="utf-8")
    classpath = ":".join(str(p) for p in [*connect_api_classpath(), *libraries])
    subprocess.run(
        ["javac", "--release", "17", "-nowarn", "-cp", classpath, "-d", str(classes),
         *(str(source_root / name) for name in sources)],
        check=True, capture_output=True, timeout=120,
    )
    manifests = classes / "META-INF" / "services"
    manifests.mkdir(parents=True, exist_ok=True)
    for service, implementations in services.items():
        (manifests / service).write_text("".join(f"{c}\n" for c in implementations),
                                         encoding="utf-8")
    plugin_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(["jar", "cf", str(plugin_dir / f"{plugin_dir.name}.jar"), "-C", str(classes),
                    "."], check=True, capture_output=True, timeout=120)
    for library in libraries:
        shutil.copy2(library, plugin_dir / library.name)
    return plugin_dir


def maven_jar(group: str, artifact: str, version: str) -> Path:
    """A library's jar from the local Maven repository, fetched from Maven Central by Maven
    when it is not there yet."""
    jar = (Path.home() / ".m2" / "repository" / group.replace(".", "/") / artifact / version
           / f"{artifact}-{version}.jar")
    if not jar.is_file():
        subprocess.run(
            ["mvn", "-B", "-q", "dependency:get", f"-Dartifact={group}:{artifact}:{version}",
             "-Dtransitive=false"],
            check=True, capture_output=True, timeout=600,
        )
    return jar


def java_worker(
    work: Path,
    bootstrap: str,
    group: str,
    plugin_dirs: Sequence[Path] = (),
    properties: Mapping[str, str] | None = None,
) -> WorkerProcess:
    """A distributed worker (not started), alone in a cluster ``<group>-<random>``, whose
    ``plugin.path`` holds the plugin directories ``make install`` fetched and
    ``plugin_dirs`` (directories of plugin directories, as a Kafka Connect worker is given
    them), found by their ServiceLoader manifests (no reflective scan of the classpath);
    ``properties`` are its other worker properties. Its files are under ``work/worker``."""
    return WorkerProcess(work / "worker", bootstrap, {
        **cluster_properties(f"{group}-{uuid.uuid4().hex[:8]}"),
        "plugin.path": ",".join(str(path) for path in [ensure_plugins(), *plugin_dirs]),
        "plugin.discovery": "service_load",
        **(properties or {}),
    }, mode="distributed")


@contextlib.contextmanager
def running(process: WorkerProcess) -> Iterator[WorkerProcess]:
    """``process`` started (one module's workers at a time under xdist), stopped after."""
    # here, not at the top: the integration conftest imports this module
    from tests.integration.conftest import one_start_at_a_time

    with one_start_at_a_time():
        process.start()
    try:
        yield process
    finally:
        process.stop()

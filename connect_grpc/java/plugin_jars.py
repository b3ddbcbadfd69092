"""Kafka Connect plugins from Maven Central, laid out as a ``plugin.path`` directory, once.

Each plugin is fetched by ``mvn`` with :func:`connect_grpc.kafka.jars.fetch_maven_libs` (as the
broker's jars are) and then laid out as one plugin directory of Kafka Connect's layout::

    ${CONNECT_GRPC_CACHE:-~/.cache/connect-grpc}/plugins/<plugin-name>/*.jar

so that ``plugin.path=<cache>/plugins`` finds every plugin, each in a class loader of its own.
The jars the worker's runtime provides to every plugin are left out of the plugin's own set
(:data:`RUNTIME_PROVIDED`): the Connect API (the runtime's must serve the plugin), slf4j (so
that the runtime's binding serves the plugin's logs), the compression libraries (native code
a second class loader cannot load again), and Jackson's core trio (beside the runtime's
``connect-json`` it breaks the scan of converters built on JsonConverter). A plugin whose pom
names more of the runtime's own jars leaves those out too (``PluginArtifact.also_provided``:
``connect-mirror`` names Kafka Connect's runtime and its REST server, for MirrorMaker's
dedicated mode).

The plugin's own ``kafka-clients`` stays: Kafka Connect loads ``org.apache.kafka.common``
from the runtime first, so the plugin's copy only serves the classes the runtime's release
no longer has. Kafka 4.4.0 moved ``AppInfoParser`` and ``Sanitizer`` (and more of
``common.utils``) under ``common.utils.internals``; ``connect-file`` 4.3.1's ``version()`` and
Debezium 3.6.1's metrics call them at the old names (decision record 0070 does the same for
the benchmarks' Kafka Connect).

The plugin directories hold hard links to the jars Maven fetched (a copy where links fail), so
they cost no second copy on disk. ``python -m connect_grpc.java.plugin_jars`` ensures them all
(``make install`` runs it; ``--print-path`` prints the ``plugin.path`` directory).

Public API
----------
``PLUGINS: tuple[PluginArtifact, ...]``
    The plugins tests and the demo use.
``plugins_root(cache: Path | None = None) -> Path``
    The ``plugin.path`` directory: ``<cache>/plugins``.
``ensure_plugin(plugin: PluginArtifact, cache: Path | None = None) -> Path``
    The plugin's directory, fetched and laid out once.
``ensure_plugins(cache: Path | None = None) -> Path``
    Every plugin of :data:`PLUGINS`; returns :func:`plugins_root`.
``runtime_provided(jar_name: str) -> bool``
    Whether a jar is one the runtime provides (left out of plugin directories).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import structlog

from connect_grpc.kafka.jars import cache_root, fetch_maven_libs, file_lock

log = structlog.get_logger(__name__)

#: Kafka's FileStream connectors. Maven Central refuses ``connect-file`` 4.4.0 (the runtime's
#: release); 4.3.1 is the newest it serves. It runs beside its own ``kafka-clients`` 4.3.1.
CONNECT_FILE_VERSION = "4.3.1"
DEBEZIUM_VERSION = "3.6.1.Final"
#: MirrorMaker 2's connectors. Maven Central refuses ``connect-mirror`` and
#: ``connect-mirror-client`` 4.4.0 as it refuses ``connect-file``; 4.3.1 is the newest it
#: serves. Like ``connect-file``, it runs beside its own ``kafka-clients`` 4.3.1.
CONNECT_MIRROR_VERSION = "4.3.1"

#: What the runtime provides, excluded from Maven's resolution (``groupId:artifactId``) with
#: what they alone bring in: slf4j, the compression libraries, Jackson's core trio.
RUNTIME_PROVIDED_ARTIFACTS = (
    "org.slf4j:*",
    "at.yawk.lz4:lz4-java",
    "org.lz4:lz4-java",
    "org.xerial.snappy:snappy-java",
    "com.github.luben:zstd-jni",
    "com.fasterxml.jackson.core:jackson-core",
    "com.fasterxml.jackson.core:jackson-databind",
    "com.fasterxml.jackson.core:jackson-annotations",
)
#: Every jar left out, by ``artifactId-version.jar`` file name: the above, and the Connect API
#: with the REST API it brings (``connect-api`` is not excluded from Maven's resolution, since
#: the plugin's ``kafka-clients`` comes through it).
RUNTIME_PROVIDED = re.compile(
    r"^(connect-api|jakarta\.ws\.rs-api|slf4j-[a-z0-9]+|lz4-java|snappy-java|zstd-jni"
    r"|jackson-(core|databind|annotations))-\d[^/]*\.jar$"
)


@dataclass(frozen=True)
class PluginArtifact:
    """A plugin on Maven Central and the directory name it gets under ``plugins/``."""

    name: str
    group_id: str
    artifact_id: str
    version: str
    #: How long the first fetch usually takes (``mvn -q`` prints nothing meanwhile).
    usual_seconds: float
    #: What this plugin's pom alone brings that the runtime provides too, excluded from
    #: Maven's resolution beside :data:`RUNTIME_PROVIDED_ARTIFACTS` (``groupId:artifactId``).
    also_provided: tuple[str, ...] = ()
    #: Jars besides :attr:`main_jar` the fetch must produce.
    also_expected: tuple[str, ...] = ()

    @property
    def coordinates(self) -> str:
        return f"{self.group_id}:{self.artifact_id}:{self.version}"

    @property
    def main_jar(self) -> str:
        return f"{self.artifact_id}-{self.version}.jar"


CONNECT_FILE = PluginArtifact(
    "kafka-connect-file", "org.apache.kafka", "connect-file", CONNECT_FILE_VERSION, 15
)
DEBEZIUM_POSTGRES = PluginArtifact(
    "debezium-connector-postgres",
    "io.debezium",
    "debezium-connector-postgres",
    DEBEZIUM_VERSION,
    60,
)
CONNECT_MIRROR = PluginArtifact(
    "kafka-connect-mirror",
    "org.apache.kafka",
    "connect-mirror",
    CONNECT_MIRROR_VERSION,
    20,
    # connect-mirror's pom names what its dedicated MirrorMaker driver runs on: Kafka Connect's
    # runtime (with connect-json, connect-transforms and their jars) and its REST server's
    # Jetty, Jersey and Jackson providers. The worker's runtime provides them all (and
    # PluginClassLoader takes org.apache.kafka.connect.runtime from it in any case).
    also_provided=(
        "org.apache.kafka:connect-runtime",
        "org.eclipse.jetty:*",
        "org.eclipse.jetty.ee10:*",
        "org.glassfish.jersey.containers:*",
        "org.glassfish.jersey.inject:*",
        "com.fasterxml.jackson.jakarta.rs:*",
        "javax.xml.bind:jaxb-api",
        "javax.activation:activation",
        "io.swagger.core.v3:swagger-annotations",
    ),
    also_expected=(f"connect-mirror-client-{CONNECT_MIRROR_VERSION}.jar",),
)
#: A Java config provider of another project than Kafka (Strimzi's, reading the worker's
#: environment; 1.1.0 is the newest Maven Central serves): Kafka Connect users' own config
#: providers (Vault's, a cloud secrets manager's) are plugins of plugin.path like it.
STRIMZI_ENV_VAR_PROVIDER = PluginArtifact(
    "strimzi-env-var-config-provider", "io.strimzi", "kafka-env-var-config-provider", "1.1.0", 5
)
PLUGINS: tuple[PluginArtifact, ...] = (
    CONNECT_FILE, DEBEZIUM_POSTGRES, CONNECT_MIRROR, STRIMZI_ENV_VAR_PROVIDER
)

_POM = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by connect_grpc/java/plugin_jars.py: resolves one Kafka Connect plugin's jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.connect-grpc</groupId>
  <artifactId>plugin-{name}</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>{group_id}</groupId>
      <artifactId>{artifact_id}</artifactId>
      <version>{version}</version>
      <exclusions>
{exclusions}
      </exclusions>
    </dependency>
  </dependencies>
</project>
"""


def plugins_root(cache: Path | None = None) -> Path:
    """The ``plugin.path`` directory that holds one directory per plugin."""
    return (cache or cache_root()) / "plugins"


def runtime_provided(jar_name: str) -> bool:
    """Whether ``jar_name`` is one of the runtime's jars, which plugin directories leave out."""
    return RUNTIME_PROVIDED.match(jar_name) is not None


def render_pom(plugin: PluginArtifact) -> str:
    exclusions = "\n".join(
        "        <exclusion>\n"
        f"          <groupId>{group_id}</groupId>\n"
        f"          <artifactId>{artifact_id}</artifactId>\n"
        "        </exclusion>"
        for group_id, artifact_id in (
            item.split(":") for item in (*RUNTIME_PROVIDED_ARTIFACTS, *plugin.also_provided)
        )
    )
    return _POM.format(
        name=plugin.name,
        group_id=plugin.group_id,
        artifact_id=plugin.artifact_id,
        version=plugin.version,
        exclusions=exclusions,
    )


def ensure_plugin(plugin: PluginArtifact, cache: Path | None = None) -> Path:
    """The plugin's directory under :func:`plugins_root`, fetched and laid out once.

    The fetch lives under ``<cache>/plugin-fetch/<name>/<version>-<pom digest>`` (Maven's
    output and its completion marker); a marker there names the fetch the plugin directory
    holds, so a new version or pom replaces the directory. Safe to call from concurrent
    processes.

    Raises:
        KafkaBrokerError: mvn is missing or failed (from :func:`fetch_maven_libs`).
    """
    cache = cache or cache_root()
    target = plugins_root(cache) / plugin.name
    fetch_home = cache / "plugin-fetch" / plugin.name
    marker = fetch_home / "installed"
    pom = render_pom(plugin)
    fetch_id = f"{plugin.version}-{hashlib.sha256(pom.encode()).hexdigest()[:12]}"
    if _installed(marker, target, plugin, fetch_id):
        return target
    libs = fetch_maven_libs(
        fetch_home / fetch_id,
        pom,
        [plugin.main_jar, *plugin.also_expected],
        f"Kafka Connect plugin {plugin.coordinates}",
        usual_seconds=plugin.usual_seconds,
    )
    with file_lock(fetch_home / ".lock"):
        if _installed(marker, target, plugin, fetch_id):
            return target
        # Staged beside the fetch, not under plugins/: a scan of the plugin path meanwhile
        # must not see a half-made plugin directory.
        staging = fetch_home / "plugin.partial"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        left_out: list[str] = []
        for jar in sorted(libs.glob("*.jar")):
            if runtime_provided(jar.name):
                left_out.append(jar.name)
            else:
                _link_or_copy(jar, staging / jar.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        marker.write_text(fetch_id + "\n", "utf-8")
        log.info(
            "plugin_laid_out",
            plugin=plugin.coordinates,
            directory=str(target),
            jars=sum(1 for _ in target.glob("*.jar")),
            left_out=left_out,
        )
    return target


def ensure_plugins(cache: Path | None = None) -> Path:
    """Every plugin of :data:`PLUGINS`; returns the ``plugin.path`` directory holding them."""
    for plugin in PLUGINS:
        ensure_plugin(plugin, cache)
    return plugins_root(cache)


def _installed(marker: Path, target: Path, plugin: PluginArtifact, fetch_id: str) -> bool:
    try:
        recorded = marker.read_text("utf-8").strip()
    except FileNotFoundError:
        return False
    return recorded == fetch_id and (target / plugin.main_jar).exists()


def _link_or_copy(source: Path, destination: Path) -> None:
    try:
        os.link(source, destination)
    except OSError:
        # Another file system, or one without hard links.
        shutil.copy2(source, destination)


def main() -> int:
    """``python -m connect_grpc.java.plugin_jars``: ensures every plugin (``make install``).

    Silent when they are there (``make`` runs it on every install); ``--print-path`` writes
    the ``plugin.path`` directory to stdout.
    """
    root = ensure_plugins()
    if "--print-path" in sys.argv[1:]:
        sys.stdout.write(f"{root}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Fetching the broker's jars with ``mvn`` into a cache outside the repository, once.

Jars come from Maven Central through ``mvn`` into::

    ${CONNECT_GRPC_CACHE:-~/.cache/connect-grpc}/kafka/<version>/libs

Separate from the broker's configuration (:mod:`.kraft`) and process (:mod:`.broker`):
the fetch runs once per version and machine, and other JVMs (Kafka Connect in the
benchmarks, the interop tests) fetch their jars with the same :func:`fetch_maven_libs`.

Public API
----------
``KAFKA_VERSION: str``
    The Kafka release used (``"4.4.0"``).
``cache_root() -> Path``
    ``$CONNECT_GRPC_CACHE`` or ``~/.cache/connect-grpc``.
``ensure_kafka_libs(version: str = KAFKA_VERSION, cache: Path | None = None) -> Path``
    Fetches the broker jars (idempotent: skipped when the completion marker exists) and
    returns the ``libs`` directory.
``fetch_maven_libs(home, pom_text, expected_jars, what, usual_seconds=None) -> Path``
    The same for any pom.
``file_lock(path)``
    An exclusive lock on a file, held for a ``with`` block (serialises processes).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path

import structlog

from connect_grpc.kafka.processes import KafkaBrokerError, output_tail

log = structlog.get_logger(__name__)

KAFKA_VERSION = "4.4.0"
#: How long the first fetch of the broker's jars (about 45 MB) usually takes.
KAFKA_FETCH_USUAL_S = 60
LOG4J_VERSION = "2.25.5"  # the log4j-core version kafka-server 4.4.0 depends on
MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
LIBS_MARKER = ".complete"


def cache_root() -> Path:
    """``$CONNECT_GRPC_CACHE`` or ``~/.cache/connect-grpc``."""
    env = os.environ.get("CONNECT_GRPC_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "connect-grpc"


def render_pom(version: str = KAFKA_VERSION, log4j_version: str = LOG4J_VERSION) -> str:
    """The pom that resolves the broker's runtime jars."""
    template = resources.files("connect_grpc.kafka").joinpath("pom.xml").read_text("utf-8")
    return template.replace("@KAFKA_VERSION@", version).replace("@LOG4J_VERSION@", log4j_version)


def ensure_kafka_libs(version: str = KAFKA_VERSION, cache: Path | None = None) -> Path:
    """Downloads Kafka ``version`` and its runtime dependencies once; returns the libs dir.

    Safe to call concurrently from several processes (a file lock serialises the fetch).
    """
    return fetch_maven_libs(
        (cache or cache_root()) / "kafka" / version,
        render_pom(version),
        [f"kafka_2.13-{version}.jar"],
        f"Kafka {version}",
        usual_seconds=KAFKA_FETCH_USUAL_S,
    )


def fetch_maven_libs(
    home: Path,
    pom_text: str,
    expected_jars: Sequence[str],
    what: str,
    usual_seconds: float | None = None,
) -> Path:
    """The runtime jars of the pom ``pom_text``, fetched by ``mvn`` into ``home/libs`` once
    (a marker file says they are complete; a file lock serialises concurrent fetches).
    ``mvn -q`` prints nothing while it downloads, so the log says before it starts what is
    fetched and how long that usually takes (``usual_seconds``).

    Raises:
        KafkaBrokerError: mvn is missing or failed, or did not produce ``expected_jars``.
    """
    libs = home / "libs"
    if (home / LIBS_MARKER).exists():
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with file_lock(home / ".lock"):
        if (home / LIBS_MARKER).exists():
            return libs
        mvn = shutil.which("mvn")
        if mvn is None:
            raise KafkaBrokerError(f"mvn not found on PATH; it is needed to fetch {what}")
        pom = home / "pom.xml"
        pom.write_text(pom_text, "utf-8")
        staging = home / "libs.partial"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(libs, ignore_errors=True)
        log.info("maven_libs_fetching", what=what, directory=str(libs),
                 usual_seconds=usual_seconds, note="first time only; mvn prints nothing")
        started = time.monotonic()
        result = subprocess.run(
            [
                mvn, "-B", "-q", "-f", str(pom),
                f"{MAVEN_DEPENDENCY_PLUGIN}:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staging}",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise KafkaBrokerError(
                f"mvn failed to fetch {what} (exit {result.returncode}): "
                f"{output_tail(result.stdout + result.stderr)}"
            )
        missing = [jar for jar in expected_jars if not (staging / jar).exists()]
        if missing:
            raise KafkaBrokerError(f"mvn did not produce {', '.join(missing)} in {staging}")
        staging.rename(libs)
        (home / LIBS_MARKER).write_text(f"{what}\n", "utf-8")
        log.info(
            "maven_libs_fetched",
            what=what,
            jars=sum(1 for _ in libs.glob("*.jar")),
            seconds=round(time.monotonic() - started, 1),
        )
    return libs


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Holds an exclusive lock on ``path`` (created if missing) for the ``with`` block."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)

"""Where the built ``jvm/`` project is, and the classpath that runs it.

``make install`` builds ``jvm/`` with Maven into ``jvm/target``: the project's jar
(``connect-grpc-jvm.jar``) and, in ``lib/``, the runtime jars it needs (Kafka's
``connect-runtime`` 4.4.0 and its dependencies). That directory is the checkout's, which
serves the editable install ``make install`` makes; an install from a wheel (the Docker
image's) finds the same two things in the directory :data:`JVM_TARGET_ENV` names, built by
``mvn -f jvm/pom.xml package`` elsewhere and copied there.

Public API
----------
``CATALOGUE_MAIN: str``
    The command line's class (``list`` and ``validate``; ``jvm/src/main/.../Main.java``).
``JVM_TARGET_ENV: str``
    The environment variable naming the built JVM side's directory, in place of the checkout's.
``JvmNotBuiltError``
    The build output is missing.
``jvm_target(repository: Path | None = None) -> Path``
    The built JVM side's directory: :data:`JVM_TARGET_ENV`'s, else ``jvm/target`` of the
    checkout this package is in.
``built_jvm(repository: Path | None = None) -> tuple[Path, Path]``
    The built project's jar and ``lib/``; :class:`JvmNotBuiltError` when either is missing.
``jvm_classpath(repository: Path | None = None) -> str``
    The ``java -cp`` classpath of the built project.
"""

from __future__ import annotations

import os
from pathlib import Path

CATALOGUE_MAIN = "io.connectgrpc.jvm.plugins.Main"
JAR_NAME = "connect-grpc-jvm.jar"
JVM_TARGET_ENV = "CONNECT_GRPC_JVM_TARGET"


class JvmNotBuiltError(RuntimeError):
    """``jvm/`` has not been built (``make install`` builds it)."""


def jvm_target(repository: Path | None = None) -> Path:
    """``jvm/target`` of ``repository``; without one, the directory :data:`JVM_TARGET_ENV`
    names when it is set, else ``jvm/target`` of the checkout this package is in."""
    if repository is None and os.environ.get(JVM_TARGET_ENV, "").strip():
        return Path(os.environ[JVM_TARGET_ENV].strip()).expanduser()
    root = repository or Path(__file__).resolve().parents[2]
    return root / "jvm" / "target"


def built_jvm(repository: Path | None = None) -> tuple[Path, Path]:
    """The built project's jar and its ``lib/`` directory (:func:`jvm_target`'s).

    Raises:
        JvmNotBuiltError: the jar or its ``lib/`` is missing.
    """
    target = jvm_target(repository)
    jar, libs = target / JAR_NAME, target / "lib"
    if not jar.is_file() or not libs.is_dir():
        raise JvmNotBuiltError(
            f"{jar} or {libs} is missing: `make install` builds jvm/ in a checkout; an "
            f"install from a wheel names the built jvm/target in {JVM_TARGET_ENV}")
    return jar, libs


def jvm_classpath(repository: Path | None = None) -> str:
    """The classpath of the built project: its jar, then every jar of ``lib/``.

    Raises:
        JvmNotBuiltError: the jar or its ``lib/`` is missing.
    """
    jar, libs = built_jvm(repository)
    return os.pathsep.join([str(jar), str(libs / "*")])

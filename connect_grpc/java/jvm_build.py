"""Where the built ``jvm/`` project is, and the classpath that runs it.

``make install`` builds ``jvm/`` with Maven into ``jvm/target``: the project's jar
(``connect-grpc-jvm.jar``) and, in ``lib/``, the runtime jars it needs (Kafka's
``connect-runtime`` 4.4.0 and its dependencies). The directory is the repository's, so this
serves a checkout (the editable install ``make install`` makes), not an installed wheel.

Public API
----------
``CATALOGUE_MAIN: str``
    The command line's class (``list`` and ``validate``; ``jvm/src/main/.../Main.java``).
``JvmNotBuiltError``
    The build output is missing.
``jvm_target(repository: Path | None = None) -> Path``
    ``jvm/target`` of the checkout this package is in.
``jvm_classpath(repository: Path | None = None) -> str``
    The ``java -cp`` classpath of the built project.
"""

from __future__ import annotations

import os
from pathlib import Path

CATALOGUE_MAIN = "io.connectgrpc.jvm.plugins.Main"
JAR_NAME = "connect-grpc-jvm.jar"


class JvmNotBuiltError(RuntimeError):
    """``jvm/`` has not been built (``make install`` builds it)."""


def jvm_target(repository: Path | None = None) -> Path:
    """``jvm/target`` of ``repository`` (by default the checkout this package is in)."""
    root = repository or Path(__file__).resolve().parents[2]
    return root / "jvm" / "target"


def jvm_classpath(repository: Path | None = None) -> str:
    """The classpath of the built project: its jar, then every jar of ``lib/``.

    Raises:
        JvmNotBuiltError: the jar or its ``lib/`` is missing.
    """
    target = jvm_target(repository)
    jar = target / JAR_NAME
    libs = target / "lib"
    if not jar.is_file() or not libs.is_dir():
        raise JvmNotBuiltError(f"{jar} or {libs} is missing: `make install` builds jvm/")
    return os.pathsep.join([str(jar), str(libs / "*")])

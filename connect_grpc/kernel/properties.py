"""The Java-style ``.properties`` file reader (worker files, connector files, the file config
provider's files).

A shared kernel: it imports nothing of the package, so that anything (``worker_config``,
``config_providers``, the command line) can read a properties file without an import cycle.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["read_properties"]


def read_properties(path: Path) -> dict[str, str]:
    """Reads a Java-style .properties file (``key=value`` or ``key: value``, # and ! comments,
    backslash line continuations)."""
    result: dict[str, str] = {}
    pending = ""
    for raw_line in path.read_text(encoding="utf-8").splitlines():
        line = pending + raw_line.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        key, value = _split_property(line)
        result[key] = value
    if pending:
        key, value = _split_property(pending)
        result[key] = value
    return result


def _split_property(line: str) -> tuple[str, str]:
    for index, char in enumerate(line):
        if char in "=:" and (index == 0 or line[index - 1] != "\\"):
            return line[:index].strip(), line[index + 1 :].strip()
        if char.isspace():
            rest = line[index:].lstrip()
            if rest[:1] in ("=", ":"):
                rest = rest[1:]
            return line[:index].strip(), rest.strip()
    return line.strip(), ""

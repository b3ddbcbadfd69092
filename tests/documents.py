"""The documents whose commands the tests run: README.md and the pages of docs/, read as
written.

- :func:`commands` splits a document's ```sh blocks into shell commands (a command with its
  continuation lines and heredoc, and the documented failure in the comment lines after it).
- :func:`section_lines` and :func:`section_text` find a section by its heading, in a given
  document; :func:`heading_above` names the section a line belongs to.

Pure reading: no broker, no worker, nothing run.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: The pages of the user guide that hold commands the tests run.
RUNNING = DOCS / "running.md"
PIPELINE = DOCS / "pipeline.md"
CONNECTORS = DOCS / "connectors.md"
OPERATIONS = DOCS / "operations.md"
SECURITY = DOCS / "security.md"
CTL = DOCS / "ctl.md"
CLIENTS = DOCS / "clients.md"
METRICS = DOCS / "metrics.md"
DOCKER = DOCS / "docker.md"
DEVELOPMENT = DOCS / "development.md"

STREAMING_MARK = "# streams until Ctrl-C"


def documents() -> list[Path]:
    """README.md and every markdown page under docs/, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


@dataclass(frozen=True, slots=True)
class Command:
    """One shell command of a document's ```sh blocks, as written."""

    text: str
    line: int
    #: Which ```sh block of the document it is in (0: the first).
    block: int
    #: The documented failure (the comment lines right after the command), if any.
    expected_error: tuple[str, ...] = ()

    @property
    def words(self) -> list[str]:
        return shlex.split(self.text.split("\n", 1)[0].rstrip("\\"), comments=True)

    @property
    def streams(self) -> bool:
        return STREAMING_MARK in self.text


def sh_blocks(document: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number of the first line, lines) of every ```sh block."""
    lines = document.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```sh":  # possibly indented, inside a list item
            indent = len(lines[index]) - len(lines[index].lstrip())
            end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
            yield index + 2, [line[indent:] for line in lines[index + 1 : end]]
            index = end
        index += 1


def _complete(text: str) -> bool:
    if text.endswith("\\"):
        return False
    heredoc = re.search(r"<<-?\s*'?(\w+)'?", text.split("\n", 1)[0])
    if heredoc is not None:
        return text.split("\n")[-1] == heredoc.group(1) and "\n" in text
    try:
        shlex.split(text, comments=True)
    except ValueError:  # an open quote: a multi-line argument
        return False
    return True


def commands(document: Path) -> list[Command]:
    """Every command of the document's ```sh blocks, in order."""
    found: list[Command] = []
    for block_index, (first_line, block) in enumerate(sh_blocks(document)):
        pending: list[str] = []
        start = 0
        error_lines: list[str] | None = None
        for offset, line in enumerate(block):
            if pending:
                pending.append(line)
                if _complete("\n".join(pending)):
                    found.append(Command("\n".join(pending), start, block_index))
                    pending = []
                continue
            stripped = line.strip()
            if stripped.startswith("#"):
                comment = stripped.lstrip("#").strip()
                if error_lines is None and found and comment.startswith(("ERROR:", "Error ")):
                    error_lines = []
                if error_lines is not None:
                    error_lines.append(comment)
                    last = found[-1]
                    found[-1] = Command(last.text, last.line, last.block, tuple(error_lines))
                continue
            error_lines = None
            if not stripped:
                continue
            start = first_line + offset
            pending = [line]
            if _complete(line):
                found.append(Command(line, start, block_index))
                pending = []
        assert not pending, f"{document}:{start}: unterminated command"
    return found


def _headings(lines: list[str]) -> Iterator[tuple[int, int]]:
    """(index, level) of every markdown heading, outside code blocks (where ``#`` starts a
    comment)."""
    fenced = False
    for index, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        depth = len(line) - len(line.lstrip("#"))
        if not fenced and 0 < depth <= 6 and line[depth:depth + 1] == " ":
            yield index, depth


def section_lines(document: Path, heading: str) -> range:
    """The line numbers (1-based) of a section of ``document``: its heading (the whole
    line, ``## Distributed mode``) up to the next heading of the same or a higher level."""
    lines = document.read_text(encoding="utf-8").splitlines()
    assert heading in lines, f"{document.relative_to(ROOT)} has no heading {heading!r}"
    start = lines.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    for index, depth in _headings(lines):
        if index > start and depth <= level:
            return range(start + 1, index + 1)
    return range(start + 1, len(lines) + 1)


def section_text(document: Path, heading: str) -> str:
    """The text of a section of ``document`` (see :func:`section_lines`), heading included."""
    lines = document.read_text(encoding="utf-8").splitlines()
    found = section_lines(document, heading)
    return "\n".join(lines[found.start - 1 : found.stop - 1]) + "\n"


def section_commands(document: Path, heading: str) -> list[Command]:
    """The commands of a section of ``document``, its subsections' included."""
    found = section_lines(document, heading)
    return [command for command in commands(document) if command.line in found]


def heading_above(document: Path, line: int) -> str:
    """The heading (the whole line) of the innermost section that holds ``line`` (1-based)."""
    lines = document.read_text(encoding="utf-8").splitlines()
    above = [index for index, _ in _headings(lines) if index < line - 1]
    assert above, f"{document.relative_to(ROOT)}:{line} is above every heading"
    return lines[above[-1]]

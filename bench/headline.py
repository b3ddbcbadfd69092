"""BENCHMARKS.md's headline table, generated from bench/results/headline.json.

Run from the repository root (``make bench-table`` runs the first)::

    .venv/bin/python bench/headline.py            # rewrite the table between the markers
    .venv/bin/python bench/headline.py --check    # exit 1 if BENCHMARKS.md is not what it gives

``bench/results/headline.json`` is a list of entries, one per headline measure of a bench (see
:class:`Entry`), in the table's order. The table replaces whatever lies between
``<!-- headline:start -->`` and ``<!-- headline:end -->`` in BENCHMARKS.md; nothing else of
the page is touched. A bench that records its figures (``bench/filestream.py --results FILE``,
``bench/cluster.py --results FILE``) replaces its entries through :func:`record`, keyed by
``id``, with the date and commit of the run (:func:`stamp`); an entry transcribed from the
history says so in its ``source``.

Standard library only: the benches import it from their own directory (``import headline``),
the unit tests as ``bench.headline``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

START = "<!-- headline:start -->"
END = "<!-- headline:end -->"
ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "headline.json"
PAGE = ROOT / "BENCHMARKS.md"
#: Where each bench's dated results are, relative to the repository root.
HISTORY = "bench/results/history"
BETTER = ("higher", "lower")


@dataclass(frozen=True)
class Entry:
    """One headline measure: its latest figure against its anchor, and where it comes from."""

    #: Stable key, e.g. ``filestream.sink.none.p1.create``: what a bench's recording replaces.
    id: str
    #: The bench, as its history file is named (``bench/results/history/<bench>.md``).
    bench: str
    #: What is measured.
    measure: str
    #: What it is measured against, in the same run.
    anchor: str
    #: The latest figure as recorded (``1.18x``, ``0.40x / 0.43x (pause)``, ``119 ms / 135 ms``).
    ratio: str
    #: ``higher`` or ``lower``: which way is better.
    better: str
    #: The spread over rounds or runs, as recorded.
    spread: str
    #: When the run was (as recorded: a date, often with the time).
    date: str
    #: The commit of the run's code, or why there is none.
    commit: str
    #: The command that reproduces it.
    command: str
    #: Where the figure was taken from: a history section, or a bench's own recording.
    source: str
    #: What a reader must know besides (a later change it predates, ...); empty if nothing.
    note: str = ""

    def __post_init__(self) -> None:
        if self.better not in BETTER:
            raise ValueError(f"{self.id}: better is {self.better!r}, not one of {BETTER}")
        for name, value in asdict(self).items():
            if not isinstance(value, str):
                raise ValueError(f"{self.id}: {name} is not a string")
            if "\n" in value:
                raise ValueError(f"{self.id}: {name} spans lines")
            if name != "note" and not value:
                raise ValueError(f"{self.id or '(no id)'}: {name} is empty")

    @classmethod
    def from_json(cls, value: object) -> Entry:
        if not isinstance(value, dict):
            raise ValueError(f"an entry is not an object: {value!r}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - names)
        if unknown:
            raise ValueError(f"{value.get('id')}: unknown fields {unknown}")
        return cls(**value)


def load(path: Path = RESULTS) -> list[Entry]:
    """The entries of ``path``, in order; fails on a repeated id."""
    raw = json.loads(path.read_text("utf-8"))
    if not isinstance(raw, list):
        raise ValueError(f"{path}: not a list of entries")
    entries = [Entry.from_json(item) for item in raw]
    seen: set[str] = set()
    for entry in entries:
        if entry.id in seen:
            raise ValueError(f"{path}: id {entry.id} twice")
        seen.add(entry.id)
    return entries


def dump(entries: Sequence[Entry], path: Path = RESULTS) -> None:
    text = json.dumps([asdict(entry) for entry in entries], ensure_ascii=False, indent=2)
    path.write_text(text + "\n", "utf-8")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(entries: Iterable[Entry]) -> str:
    """The Markdown table of ``entries``, then the source of each row, numbered alike."""
    rows = [
        "| # | Bench | Measure | Anchor | Latest | Better | Spread, as recorded | Run | Command "
        "| Note |",
        "|---:|---|---|---|---|---|---|---|---|---|",
    ]
    sources = []
    for number, entry in enumerate(entries, start=1):
        cells = [
            str(number),
            f"[{entry.bench}]({HISTORY}/{entry.bench}.md)",
            _cell(entry.measure),
            _cell(entry.anchor),
            f"**{_cell(entry.ratio)}**",
            entry.better,
            _cell(entry.spread),
            _cell(f"{entry.date}, {entry.commit}"),
            f"`{_cell(entry.command)}`",
            _cell(entry.note),
        ]
        rows.append("| " + " | ".join(cells) + " |")
        sources.append(f"{number}. {entry.source}")
    return "\n".join([*rows, "", "Where each row's figures come from:", "", *sources]) + "\n"


def render(page: str, entries: Iterable[Entry]) -> str:
    """``page`` with the table of ``entries`` between its markers (each alone on its line)."""
    start, end = page.find(START + "\n"), page.find("\n" + END)
    if start < 0 or end < 0 or end < start or page.count(START) != 1 or page.count(END) != 1:
        raise ValueError(f"the page needs one {START} line followed by one {END} line")
    head = page[: start + len(START) + 1]
    return head + "\n" + table(entries) + "\n" + page[end + 1 :]


def record(path: Path, entries: Sequence[Entry]) -> None:
    """Replaces the entries of ``path`` that have the ids of ``entries`` (in place) and adds
    the others after the last entry of their bench (at the end if it has none)."""
    current = load(path) if path.exists() else []
    new = {entry.id: entry for entry in entries}
    merged = [new.pop(entry.id, entry) for entry in current]
    for entry in entries:
        if entry.id not in new:
            continue
        of_bench = [i for i, old in enumerate(merged) if old.bench == entry.bench]
        merged.insert(of_bench[-1] + 1 if of_bench else len(merged), new.pop(entry.id))
    dump(merged, path)


def stamp(root: Path = ROOT) -> tuple[str, str]:
    """The date (local, to the minute) and ``git rev-parse --short HEAD`` of ``root``, that
    commit followed by ``+dirty`` when tracked files differ from it."""
    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              check=False)

    head = git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        return date, "not known (no git)"
    dirty = git("diff", "--quiet", "HEAD", "--").returncode != 0
    return date, head.stdout.strip() + ("+dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the entries (JSON)")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page to write the table in")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the page's table is not the JSON's")
    args = parser.parse_args(argv)
    entries = load(args.results)
    page = args.page.read_text("utf-8")
    wanted = render(page, entries)
    if args.check:
        if wanted != page:
            sys.stdout.write(f"{args.page}: the headline table differs from {args.results}; "
                             f"run `make bench-table`\n")
            return 1
        sys.stdout.write(f"{args.page}: the headline table is {args.results}'s\n")
        return 0
    if wanted != page:
        args.page.write_text(wanted, "utf-8")
    sys.stdout.write(f"{args.page}: {len(entries)} headline rows from {args.results}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

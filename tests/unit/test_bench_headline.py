"""BENCHMARKS.md's headline table is what bench/headline.py makes of bench/results/headline.json,
and that script's table, markers and recording work on small examples."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from bench import headline

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIBED = re.compile(r'transcribed from (bench/results/history/[a-z_]+\.md), section "(.+)"')


def entry(id_: str, bench: str = "filestream", **changes: str) -> headline.Entry:
    fields = {
        "id": id_,
        "bench": bench,
        "measure": f"measure {id_}",
        "anchor": "Kafka Connect",
        "ratio": "1.18x",
        "better": "higher",
        "spread": "1.07x to 1.24x",
        "date": "2026-11-27 12:11",
        "commit": "dd94975",
        "command": ".venv/bin/python bench/filestream.py --rounds 3",
        "source": "recorded by bench/filestream.py --results",
        "note": "",
    }
    fields.update(changes)
    return headline.Entry(**fields)


def test_the_page_s_table_is_what_the_json_gives() -> None:
    """If this fails, run `make bench-table` (and look at what changed in the JSON)."""
    page = headline.PAGE.read_text("utf-8")
    assert headline.render(page, headline.load(headline.RESULTS)) == page


def test_every_entry_names_its_bench_s_history_and_a_section_that_exists() -> None:
    for item in headline.load(headline.RESULTS):
        assert (ROOT / headline.HISTORY / f"{item.bench}.md").is_file(), item.id
        if item.source.startswith("recorded by "):
            continue
        match = TRANSCRIBED.fullmatch(item.source)
        assert match, f"{item.id}: source {item.source!r} is neither transcribed nor recorded"
        history = (ROOT / match[1]).read_text("utf-8").splitlines()
        assert f"## {match[2]}" in history, f"{item.id}: no section {match[2]!r} in {match[1]}"


def test_the_table_of_two_entries() -> None:
    rows = [
        entry("a", note="older than 3763a31"),
        entry("b", bench="cluster", ratio="0.40x / 0.43x (pause)", better="lower",
              command="bench/cluster.py --anchor-only", source="transcribed from X"),
    ]
    assert headline.table(rows) == (
        "| # | Bench | Measure | Anchor | Latest | Better | Spread, as recorded | Run | Command "
        "| Note |\n"
        "|---:|---|---|---|---|---|---|---|---|---|\n"
        "| 1 | [filestream](bench/results/history/filestream.md) | measure a | Kafka Connect "
        "| **1.18x** | higher | 1.07x to 1.24x | 2026-11-27 12:11, dd94975 "
        "| `.venv/bin/python bench/filestream.py --rounds 3` | older than 3763a31 |\n"
        "| 2 | [cluster](bench/results/history/cluster.md) | measure b | Kafka Connect "
        "| **0.40x / 0.43x (pause)** | lower | 1.07x to 1.24x | 2026-11-27 12:11, dd94975 "
        "| `bench/cluster.py --anchor-only` |  |\n"
        "\n"
        "Where each row's figures come from:\n"
        "\n"
        "1. recorded by bench/filestream.py --results\n"
        "2. transcribed from X\n"
    )


def test_a_pipe_in_a_cell_is_escaped() -> None:
    assert "| a \\| b |" in headline.table([entry("a", measure="a | b")])


@pytest.mark.parametrize(
    "changes",
    [{"better": "more"}, {"spread": "two\nlines"}, {"ratio": ""}],
)
def test_an_entry_is_checked(changes: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        entry("a", **changes)


def test_render_writes_between_the_markers_only() -> None:
    page = f"# Title\n\nintro\n{headline.START}\nold table\n{headline.END}\n\n## After\n"
    rendered = headline.render(page, [entry("a")])
    assert rendered.startswith(f"# Title\n\nintro\n{headline.START}\n\n| # |")
    last_source = "1. recorded by bench/filestream.py --results\n"
    assert rendered.endswith(f"{last_source}\n{headline.END}\n\n## After\n")
    assert "old table" not in rendered
    assert headline.render(rendered, [entry("a")]) == rendered


@pytest.mark.parametrize(
    "page",
    ["no markers\n", f"{headline.END}\n{headline.START}\n",
     f"{headline.START}\n{headline.END}\n{headline.START}\n{headline.END}\n"],
)
def test_render_needs_one_pair_of_markers(page: str) -> None:
    with pytest.raises(ValueError):
        headline.render(page, [entry("a")])


def test_record_replaces_in_place_and_adds_after_the_last_of_its_bench(tmp_path: Path) -> None:
    path = tmp_path / "headline.json"
    headline.dump([entry("f1"), entry("f2"), entry("c1", bench="cluster")], path)
    headline.record(path, [
        entry("f1", ratio="1.20x"),
        entry("f3"),
        entry("e1", bench="eos"),
    ])
    entries = headline.load(path)
    assert [e.id for e in entries] == ["f1", "f2", "f3", "c1", "e1"]
    assert entries[0].ratio == "1.20x"


def test_load_refuses_a_repeated_id_and_an_unknown_field(tmp_path: Path) -> None:
    path = tmp_path / "headline.json"
    headline.dump([entry("a"), entry("a")], path)
    with pytest.raises(ValueError, match="twice"):
        headline.load(path)
    path.write_text(json.dumps([{**dataclasses.asdict(entry("a")), "extra": "x"}]), "utf-8")
    with pytest.raises(ValueError, match="unknown"):
        headline.load(path)


def test_the_command_line_writes_then_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, page = tmp_path / "headline.json", tmp_path / "BENCHMARKS.md"
    headline.dump([entry("a")], results)
    page.write_text(f"{headline.START}\n{headline.END}\n", "utf-8")
    argv = ["--results", str(results), "--page", str(page)]
    assert headline.main([*argv, "--check"]) == 1
    assert headline.main(argv) == 0
    assert headline.main([*argv, "--check"]) == 0
    assert "| **1.18x** |" in page.read_text("utf-8")
    assert "differs" in capsys.readouterr().out

"""bench/filestream.py's ``--only connect-grpc``: connect-grpc's rounds alone, no ratio."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def filestream(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The bench module, imported as the bench runs it (its directory on sys.path: it
    imports its sibling modules by their bare names)."""
    monkeypatch.setattr(sys, "path", [str(BENCH), *sys.path])
    return importlib.import_module("filestream")


@pytest.mark.parametrize(
    "extra", [["--results", "headline.json"], ["--connect-grpc-plugins", "java"]]
)
def test_only_refuses_what_needs_the_anchor(
    filestream: ModuleType, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        filestream.main(["--only", "connect-grpc", *extra])
    assert exited.value.code == 2
    assert "--only connect-grpc has no anchor" in capsys.readouterr().err


def test_report_ours_has_a_row_per_round_and_no_ratio(filestream: ModuleType) -> None:
    timing = filestream.Timing
    ours = filestream.Result(lines=1000)
    ours.sources = [timing(0.5, 0.1, 2500.0, 0), timing(0.25, 0.1, 5000.0, 0)]
    ours.sinks = [timing(1.0, 0.2, 1250.0, 0), timing(2.0, 0.3, 600.0, 0)]
    ours.peak_rss = [100 * 2**20, 200 * 2**20]

    text = filestream.report_ours(ours, 1000, "none", 50)

    rows = [line for line in text.splitlines() if line.startswith("| 1 ") or
            line.startswith("| 2 ")]
    assert rows == [
        "| 1 | 2,000 | 1,000 | 200 | 1,250 | 100 |",
        "| 2 | 4,000 | 500 | 300 | 600 | 200 |",
    ]
    assert "50-partition topic" in text
    assert "ratio" not in text

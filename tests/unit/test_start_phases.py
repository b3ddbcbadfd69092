"""The timing of a worker's start (kernel.start_phases): phases recorded into the start
being recorded, from the thread that runs beside it too; what that thread raises reaches
the caller, after the thread ended."""

from __future__ import annotations

import threading
import time

import pytest

from connect_grpc.kernel.start_phases import (
    StartPhases,
    process_age_s,
    recording,
    running_beside,
    start_phase,
)


def test_phases_are_recorded_into_the_current_start_only() -> None:
    phases = StartPhases()
    with start_phase("before"):  # no start recorded: nothing, and no error
        pass
    with recording(phases):
        with start_phase("topics"):
            time.sleep(0.01)
        with start_phase("topics"):  # a phase run twice counts both
            time.sleep(0.01)
    with start_phase("after"):
        pass
    fields = phases.fields()
    assert list(fields) == ["topics_s"]
    assert fields["topics_s"] >= 0.02


def test_a_phase_that_raises_is_recorded() -> None:
    phases = StartPhases()
    with recording(phases), pytest.raises(ValueError), start_phase("spark_session"):
        raise ValueError("no JVM")
    assert "spark_session_s" in phases.fields()


def test_the_thread_beside_records_into_the_same_start() -> None:
    phases = StartPhases()
    names: list[str] = []

    def runtime() -> None:
        names.append(threading.current_thread().name)
        with start_phase("runtime"):
            time.sleep(0.05)

    with recording(phases), running_beside(runtime, "runtime-start"), start_phase("stores"):
        pass
    assert names == ["runtime-start"]
    assert set(phases.fields()) == {"stores_s", "runtime_s"}
    assert phases.fields()["runtime_s"] >= 0.05  # waited for at the block's end


def test_what_the_thread_beside_raises_reaches_the_caller() -> None:
    def fails() -> None:
        raise RuntimeError("Spark did not start")

    with pytest.raises(RuntimeError, match="Spark did not start"), running_beside(fails, "t"):
        pass


def test_the_blocks_own_exception_wins_once_the_thread_ended() -> None:
    ended = threading.Event()

    def fails_late() -> None:
        time.sleep(0.05)
        ended.set()
        raise RuntimeError("Spark did not start")

    with pytest.raises(ValueError, match="unusable topic"), running_beside(fails_late, "t"):
        raise ValueError("unusable topic")
    assert ended.is_set()


def test_the_process_age_counts_from_the_process_start() -> None:
    age = process_age_s()
    assert age is None or 0 < age < 24 * 3600

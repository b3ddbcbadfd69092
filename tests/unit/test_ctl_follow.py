"""Following restarts and watches from the statuses WatchConnectorStatus streams."""

from __future__ import annotations

import dataclasses

from connect_grpc.ctl.follow import Change, RestartFollower, WatchBoard, changes, instances
from connect_grpc.kernel.domain import (
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    State,
    TaskStatus,
)

R, F, X = State.RUNNING, State.FAILED, State.RESTARTING


def status(connector: State, *tasks: State, worker: str = "w1", trace: str = "",
           name: str = "c") -> ConnectorStatus:
    return ConnectorStatus(
        name=name,
        connector=InstanceStatus(connector, worker),
        tasks=tuple(TaskStatus(i, InstanceStatus(s, worker, trace if s is F else ""))
                    for i, s in enumerate(tasks)),
        type=ConnectorType.SOURCE,
    )


def states(found: list[Change]) -> list[tuple[int | None, State | None]]:
    return [(c.instance, c.status.state if c.status else None) for c in found]


def test_changes_lists_connector_first_then_tasks_by_id() -> None:
    before = instances(status(R, R, R, R))
    after = instances(status(R, F, R, State.PAUSED))
    assert states(changes("c", before, after)) == [(0, F), (2, State.PAUSED)]
    assert states(changes("c", before, instances(status(F, R)))) == [
        (None, F), (1, None), (2, None)
    ]


def test_follower_follows_only_what_the_answer_shows_restarting() -> None:
    follower = RestartFollower("c", answer=status(R, R, X))
    assert follower.restarted == [1] and follower.waiting == [1] and not follower.done
    assert states(follower.observe(status(R, F, X))) == []  # task 0 was not restarted
    assert not follower.done
    assert states(follower.observe(status(R, F, R))) == [(1, R)]
    assert follower.done and follower.failed == []


def test_follower_reports_failed_instances_and_ignores_the_answers_old_trace() -> None:
    answer = ConnectorStatus("c", InstanceStatus(X, "w1"),
                             (TaskStatus(0, InstanceStatus(X, "w1", "old trace")),),
                             ConnectorType.SOURCE)
    follower = RestartFollower("c", answer=answer)
    assert states(follower.observe(status(X, X))) == []
    assert states(follower.observe(status(R, F, trace="boom"))) == [(None, R), (0, F)]
    assert follower.done and follower.failed == [0]


def test_follower_waits_through_unassigned_and_retrying() -> None:
    follower = RestartFollower("c", answer=status(R, X))
    for state in (State.UNASSIGNED, State.RETRYING):
        follower.observe(status(R, state))
        assert not follower.done
    follower.observe(status(R, State.PAUSED))  # the target state decides where it ends
    assert follower.done


def test_an_instance_that_disappears_has_ended() -> None:
    follower = RestartFollower("c", answer=status(R, X, X))
    assert states(follower.observe(status(R, R))) == [(0, R), (1, None)]
    assert follower.done and follower.ended == {0: InstanceStatus(R, "w1"), 1: None}


def test_with_a_baseline_an_unchanged_status_is_not_yet_the_restarted_one() -> None:
    """A worker whose view lags (a cluster's follower) may still show the status from
    before the restart: it counts once RESTARTING was seen or the status differs."""
    before = status(R, R, R)
    follower = RestartFollower("c", answer=status(X, X, R), baseline=before)
    follower.observe(before)
    assert follower.pending == {None, 0}
    follower.observe(status(X, R, R, worker="w1"))
    assert follower.pending == {None, 0}
    follower.observe(status(R, R, R))
    assert follower.waiting == [0]  # the connector was seen RESTARTING
    moved = ConnectorStatus("c", InstanceStatus(R, "w1"),
                            (TaskStatus(0, InstanceStatus(R, "w2")),
                             TaskStatus(1, InstanceStatus(R, "w1"))),
                            ConnectorType.SOURCE)
    follower.observe(moved)
    assert follower.done


def test_board_reports_changes_and_reaches_a_state() -> None:
    board = WatchBoard(["a", "b"])
    assert states(board.update("a", status(R, R, name="a"))) == [(None, R), (0, R)]
    assert not board.reached(R)  # b not seen yet
    board.update("b", status(R, name="b"))
    assert not board.reached(R)  # RUNNING needs a task
    assert states(board.update("b", status(R, R, name="b"))) == [(0, R)]
    assert board.reached(R)
    board.update("a", status(R, R, F, name="a"))
    assert not board.reached(R) and board.failed() == [("a", 1)]


def test_board_stopped_needs_no_tasks_and_deletion_shows_every_instance_gone() -> None:
    board = WatchBoard(["a"])
    board.update("a", status(State.STOPPED, name="a"))
    assert board.reached(State.STOPPED)
    board.update("a", status(R, R, name="a"))
    assert states(board.update("a", None)) == [(None, None), (0, None)]
    assert board.deleted() == ["a"] and not board.reached(R)


def _with_revisions(found: ConnectorStatus, connector: int, *tasks: int) -> ConnectorStatus:
    return dataclasses.replace(
        found,
        connector=dataclasses.replace(found.connector, revision=connector),
        tasks=tuple(dataclasses.replace(t, status=dataclasses.replace(t.status, revision=r))
                    for t, r in zip(found.tasks, tasks, strict=True)),
    )


def test_with_a_baseline_a_status_equal_to_it_under_a_higher_revision_has_settled() -> None:
    """A follower that read RESTARTING and the new FAILED in one batch shows the task as
    before the restart (same state, worker and trace), under a higher revision."""
    before = _with_revisions(status(R, R, F, trace="boom"), 1, 2, 5)
    follower = RestartFollower("c", answer=status(R, R, X), baseline=before)
    follower.observe(before)
    assert follower.waiting == [1]
    follower.observe(_with_revisions(status(R, R, F, trace="boom"), 1, 2, 8))
    assert follower.done and follower.failed == [1]


def test_without_revisions_a_status_equal_to_the_baseline_is_still_awaited() -> None:
    before = status(R, R, F, trace="boom")  # a worker that does not send revisions: 0
    follower = RestartFollower("c", answer=status(R, R, X), baseline=before)
    follower.observe(status(R, R, F, trace="boom"))
    assert follower.waiting == [1]


def test_board_shows_a_status_reported_again_under_a_new_revision() -> None:
    """A task restarted elsewhere that failed as before: the stream sends its status again
    under a higher revision, and the board lists it again."""
    board = WatchBoard(["a"])
    failed = status(R, F, trace="boom", name="a")
    board.update("a", _with_revisions(failed, 1, 4))
    assert board.update("a", _with_revisions(failed, 1, 4)) == []
    assert states(board.update("a", _with_revisions(failed, 1, 9))) == [(0, F)]

"""Log levels at run time (KIP-495, KIP-976): Kafka's level names mapped to Python's, the
logger tree a level is set on, ``last_modified``, and the three RPCs over an in-process
server on a standalone herder (cluster scope there is the one worker, as Kafka's)."""

from __future__ import annotations

import json
import logging
import sys
import types
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
import structlog
import structlog.testing
from click.testing import CliRunner, Result
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from connect_grpc.api.servicer import ConnectServicer
from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.ctl.root import ctl as ctl_root
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.logs.levels import (
    KAFKA_LEVELS,
    OFF,
    TRACE,
    LoggerLevel,
    LoggerLevels,
    kafka_level,
    parse_level,
    parse_logger_name,
    python_level,
)
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.unit.grpc_stubs import serving

pytestmark = pytest.mark.timeout(60)

VALID = "ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF"


@pytest.fixture
def namespace() -> Iterator[str]:
    """A fresh logger namespace; its loggers are removed afterwards."""
    name = f"loggertest{uuid.uuid4().hex[:8]}"
    yield name
    manager = logging.Logger.manager
    for key in [k for k in manager.loggerDict if k.startswith(name)]:
        del manager.loggerDict[key]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


# ---- level names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [("debug", "DEBUG"), (" Warn ", "WARN"), ("OFF", "OFF"), ("trace", "TRACE"), ("all", "ALL")],
)
def test_kafka_level_names_are_read_in_any_case(given: str, expected: str) -> None:
    assert parse_level(given) == expected


@pytest.mark.parametrize("given", ["WARNING", "CRITICAL", "verbose", "10"])
def test_a_level_kafka_does_not_name_is_refused_naming_the_field_and_the_valid_levels(
    given: str,
) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        parse_level(given)
    [violation] = caught.value.violations
    assert violation.field == "level"
    assert violation.description == f"invalid log level {given!r}; valid levels: {VALID}"


def test_a_missing_level_is_refused() -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        parse_level("  ")
    assert caught.value.violations[0].field == "level"
    assert "required" in caught.value.violations[0].description


def test_kafka_levels_map_to_pythons() -> None:
    assert [python_level(name) for name, _ in KAFKA_LEVELS] == [
        1, TRACE, logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR,
        logging.CRITICAL, OFF,
    ]
    assert OFF > logging.CRITICAL


def test_every_kafka_level_reads_back_as_itself() -> None:
    for name, number in KAFKA_LEVELS:
        assert kafka_level(number) == name


@pytest.mark.parametrize(
    ("python", "expected"),
    [(0, "ALL"), (7, "TRACE"), (25, "INFO"), (35, "WARN"), (55, "FATAL"), (99, "OFF")],
)
def test_a_python_level_between_kafkas_reads_as_the_one_below(python: int, expected: str) -> None:
    assert kafka_level(python) == expected


def test_a_logger_name_is_required_and_root_is_read_in_any_case() -> None:
    assert parse_logger_name("ROOT") == "root"
    assert parse_logger_name(" connect_grpc.runtime ") == "connect_grpc.runtime"
    with pytest.raises(InvalidArgumentError) as caught:
        parse_logger_name("")
    assert caught.value.violations[0].field == "name"


# ---- the logger tree -----------------------------------------------------------------------


def test_a_level_applies_to_the_namespace_and_every_logger_whose_name_starts_with_it(
    namespace: str,
) -> None:
    for suffix in (".a", ".a.b", "x", "other"):
        logging.getLogger(namespace + suffix).setLevel(logging.INFO)
    outside = logging.getLogger(f"other{namespace}")
    outside.setLevel(logging.INFO)
    levels = LoggerLevels(Clock())

    changed = levels.set_level(namespace, "DEBUG")

    # a plain prefix, as Kafka Connect: "<ns>x" and "<ns>other" are under "<ns>" too
    assert changed == sorted(
        [namespace, f"{namespace}.a", f"{namespace}.a.b", f"{namespace}x", f"{namespace}other"]
    )
    assert logging.getLogger(f"{namespace}.a.b").isEnabledFor(logging.DEBUG)
    assert not outside.isEnabledFor(logging.DEBUG)


def test_a_logger_created_after_the_set_inherits_the_namespaces_level(namespace: str) -> None:
    LoggerLevels().set_level(namespace, "ERROR")
    later = logging.getLogger(f"{namespace}.created.later")
    assert not later.isEnabledFor(logging.WARNING)
    assert later.isEnabledFor(logging.ERROR)


def test_structlog_events_follow_the_level_at_once(namespace: str) -> None:
    """structlog filters by the stdlib logger's level (``filter_by_level``), cached or not."""
    seen: list[str] = []

    def capture(logger: object, method: str, event: structlog.typing.EventDict) -> str:
        seen.append(event["event"])
        raise structlog.DropEvent

    structlog_logger = structlog.wrap_logger(
        logging.getLogger(namespace),
        processors=[structlog.stdlib.filter_by_level, capture],
        wrapper_class=structlog.stdlib.BoundLogger,
    )
    levels = LoggerLevels()
    levels.set_level(namespace, "INFO")
    structlog_logger.debug("hidden")
    levels.set_level(namespace, "DEBUG")
    structlog_logger.debug("shown")
    levels.set_level(namespace, "OFF")
    structlog_logger.critical("silenced")
    assert seen == ["shown"]


def test_last_modified_is_set_only_for_loggers_whose_level_changed(namespace: str) -> None:
    logging.getLogger(f"{namespace}.quiet").setLevel(logging.WARNING)
    logging.getLogger(f"{namespace}.loud").setLevel(logging.DEBUG)
    clock = Clock()
    levels = LoggerLevels(clock)
    assert levels.level(f"{namespace}.quiet") == LoggerLevel("WARN", None)

    # the namespace's own logger did not exist: created, it counts as changed (as Kafka's)
    assert levels.set_level(namespace, "WARN") == [namespace, f"{namespace}.loud"]
    assert levels.level(f"{namespace}.quiet") == LoggerLevel("WARN", None)
    assert levels.level(f"{namespace}.loud") == LoggerLevel("WARN", 1_000)

    clock.now = 2_000
    assert levels.set_level(namespace, "WARN") == []
    assert levels.level(namespace) == LoggerLevel("WARN", 1_000)
    assert levels.set_level(namespace, "ERROR", at=1_500) == [
        namespace, f"{namespace}.loud", f"{namespace}.quiet",
    ]
    assert levels.level(f"{namespace}.quiet") == LoggerLevel("ERROR", 1_500)


def test_an_unknown_logger_has_no_level_and_is_not_created(namespace: str) -> None:
    levels = LoggerLevels()
    assert levels.level(f"{namespace}.missing") is None
    assert f"{namespace}.missing" not in logging.Logger.manager.loggerDict


def test_root_is_named_root_in_any_case() -> None:
    levels = LoggerLevels()
    root = levels.level("ROOT")
    assert root is not None
    assert root.level == kafka_level(logging.getLogger().getEffectiveLevel())


def test_the_listing_has_root_first_then_sorted_names_and_leaves_out_off(namespace: str) -> None:
    logging.getLogger(f"{namespace}.b").setLevel(logging.INFO)
    logging.getLogger(f"{namespace}.a").setLevel(logging.DEBUG)
    logging.getLogger(f"{namespace}.off").setLevel(OFF)
    listed = LoggerLevels().all_levels()
    names = list(listed)
    assert names[0] == "root"
    assert names[1:] == sorted(names[1:])
    assert listed[f"{namespace}.a"] == LoggerLevel("DEBUG")
    assert listed[f"{namespace}.b"] == LoggerLevel("INFO")
    assert f"{namespace}.off" not in listed


def test_a_project_module_that_has_not_logged_yet_is_known() -> None:
    """structlog creates a module's stdlib logger on its first event; the module's logger
    is known (listed, readable) before that."""
    name = f"connect_grpc._probe{uuid.uuid4().hex[:8]}"
    module = types.ModuleType(name)
    module.log = structlog.get_logger(name)  # type: ignore[attr-defined]
    sys.modules[name] = module
    try:
        assert name not in logging.Logger.manager.loggerDict
        assert name in LoggerLevels().all_levels()
        assert LoggerLevels().level(name) is not None
    finally:
        del sys.modules[name]
        logging.Logger.manager.loggerDict.pop(name, None)


# ---- the RPCs on a standalone worker -------------------------------------------------------


@pytest.fixture
def address(herder: StandaloneHerder) -> Iterator[str]:
    """An in-process server of the standalone herder."""
    with serving(ConnectServicer(herder)) as served:
        yield served


@pytest.fixture
def stub(address: str) -> Iterator[pb_grpc.ConnectServiceStub]:
    channel = grpc.insecure_channel(address)
    try:
        yield pb_grpc.ConnectServiceStub(channel)
    finally:
        channel.close()


def _bad_request(error: grpc.RpcError) -> list[tuple[str, str]]:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    request = error_details_pb2.BadRequest()
    [detail] = [d for d in status.details if d.Is(request.DESCRIPTOR)]
    detail.Unpack(request)
    return [(v.field, v.description) for v in request.field_violations]


def test_set_then_get_over_grpc(stub: pb_grpc.ConnectServiceStub, namespace: str) -> None:
    logging.getLogger(f"{namespace}.child").setLevel(logging.INFO)
    answer = stub.SetLogLevel(pb.SetLogLevelRequest(name=namespace, level="debug"), timeout=10)
    assert list(answer.changed_loggers) == [namespace, f"{namespace}.child"]

    found = stub.GetLogger(pb.GetLoggerRequest(name=f"{namespace}.child"), timeout=10).logger
    assert (found.name, found.level) == (f"{namespace}.child", "DEBUG")
    assert found.HasField("last_modified")

    listed = {logger.name: logger for logger in stub.ListLoggers(pb.ListLoggersRequest()).loggers}
    assert listed[namespace].level == "DEBUG"
    assert listed["root"].level and not listed["root"].HasField("last_modified")


def test_a_logger_never_set_through_the_api_has_no_last_modified(
    stub: pb_grpc.ConnectServiceStub, namespace: str
) -> None:
    logging.getLogger(namespace).setLevel(logging.ERROR)
    found = stub.GetLogger(pb.GetLoggerRequest(name=namespace), timeout=10).logger
    assert found.level == "ERROR"
    assert not found.HasField("last_modified")


def test_cluster_scope_on_a_standalone_worker_sets_the_one_worker(
    stub: pb_grpc.ConnectServiceStub, namespace: str
) -> None:
    answer = stub.SetLogLevel(
        pb.SetLogLevelRequest(name=namespace, level="WARN", scope=pb.LOG_LEVEL_SCOPE_CLUSTER),
        timeout=10,
    )
    assert list(answer.changed_loggers) == []
    assert stub.GetLogger(pb.GetLoggerRequest(name=namespace)).logger.level == "WARN"


def test_an_unknown_logger_is_not_found(stub: pb_grpc.ConnectServiceStub, namespace: str) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.GetLogger(pb.GetLoggerRequest(name=f"{namespace}.nope"), timeout=10)
    assert caught.value.code() is grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == f"Logger {namespace}.nope not found."


def test_an_invalid_level_is_invalid_argument_naming_the_field(
    stub: pb_grpc.ConnectServiceStub, namespace: str
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.SetLogLevel(pb.SetLogLevelRequest(name=namespace, level="LOUD"), timeout=10)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert _bad_request(caught.value) == [
        ("level", f"invalid log level 'LOUD'; valid levels: {VALID}")
    ]
    assert namespace not in logging.Logger.manager.loggerDict


def test_an_unknown_scope_is_invalid_argument(
    stub: pb_grpc.ConnectServiceStub, namespace: str
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.SetLogLevel(pb.SetLogLevelRequest(name=namespace, level="INFO", scope=7), timeout=10)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert _bad_request(caught.value)[0][0] == "scope"


def test_an_empty_name_is_invalid_argument(stub: pb_grpc.ConnectServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.SetLogLevel(pb.SetLogLevelRequest(name="", level="INFO"), timeout=10)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert _bad_request(caught.value)[0][0] == "name"


# ---- connect-grpc ctl loggers --------------------------------------------------------------


@pytest.fixture
def ctl(address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "cfg"))

    def run(*args: str) -> Result:
        # the in-process worker's own events would land in the captured stdout
        with structlog.testing.capture_logs():
            return CliRunner().invoke(ctl_root, ["--target", address, *args],
                                      prog_name="connect-grpc ctl")

    return run


def test_ctl_sets_gets_and_lists_levels(ctl: Callable[..., Result], namespace: str) -> None:
    logging.getLogger(f"{namespace}.child").setLevel(logging.INFO)
    set_run = ctl("loggers", "set", namespace, "debug")
    assert set_run.exit_code == 0, set_run.stderr
    assert set_run.stdout.split() == [namespace, f"{namespace}.child"]

    got = ctl("loggers", "get", f"{namespace}.child", "-o", "json")
    assert got.exit_code == 0, got.stderr
    document = json.loads(got.stdout)
    assert document["level"] == "DEBUG" and isinstance(document["last_modified"], int)

    listed = ctl("loggers", "list", "-o", "json")
    assert json.loads(listed.stdout)[namespace]["level"] == "DEBUG"
    assert json.loads(listed.stdout)["root"]["last_modified"] is None
    table = ctl("loggers", "list")
    [row] = [line.split() for line in table.stdout.splitlines() if line.startswith(f"{namespace} ")]
    assert row[:2] == [namespace, "DEBUG"] and row[2].endswith("+00:00")


def test_ctl_cluster_scope_and_errors(ctl: Callable[..., Result], namespace: str) -> None:
    cluster = ctl("loggers", "set", namespace, "warn", "--scope", "CLUSTER")
    assert cluster.exit_code == 0, cluster.stderr
    assert cluster.stdout.strip() == f"level WARN of {namespace} written for the cluster"
    assert ctl("loggers", "set", namespace, "warn").stdout.strip() == "no logger changed"

    bad = ctl("loggers", "set", namespace, "loud")
    assert bad.exit_code != 0
    assert "INVALID_ARGUMENT" in bad.stderr and "valid levels: ALL, TRACE" in bad.stderr
    missing = ctl("loggers", "get", f"{namespace}.missing")
    assert missing.exit_code != 0 and "NOT_FOUND" in missing.stderr

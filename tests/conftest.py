"""Suite-wide settings for parallel runs with pytest-xdist (``make test PYTEST_WORKERS=N``
runs ``pytest -n N --dist loadfile``).

- Scheduling: the tests of a module run on one xdist worker (``loadfile``), so a module's
  module-scoped workers and clusters start once; the modules of one :data:`SHARED_NAMES`
  group run on one xdist worker, one after the other, because they use the same fixed
  names (a path, a topic, a group id), and so must never run at the same time; so do the
  :data:`SHARED_WORKER_MODULES` (and the other lists of modules that share workers), so
  that the shared worker and cluster start once. (Not
  ``--dist loadgroup`` with ``xdist_group`` marks: pytest-xdist 3.8 groups by renaming
  ``item._nodeid``, which pytest 9 no longer reads, so the marks would be ignored.)
- One Kafka broker for the whole run: the controller starts it before the xdist workers
  exist and hands its address to them in :data:`SHARED_BROKER_ENV` (which
  ``tests/integration/conftest.py`` honours like ``CONNECT_GRPC_KAFKA_BOOTSTRAP``), rather
  than each worker starting a broker of its own. It dies with the controller.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.testing import class_archive

#: The bootstrap servers of the broker the xdist controller started for its workers.
SHARED_BROKER_ENV = "CONNECT_GRPC_TEST_SHARED_BROKER"
#: A file the xdist workers lock to start worker processes one module at a time.
START_LOCK_ENV = "CONNECT_GRPC_TEST_START_LOCK"
#: Set by whoever runs the suite against a broker of their own (see the integration conftest).
EXTERNAL_BROKER_ENV = "CONNECT_GRPC_KAFKA_BOOTSTRAP"
INTEGRATION_DIR = Path(__file__).resolve().parent / "integration"
BROKER_START_TIMEOUT_S = 90

#: Modules that use the same fixed names, by group: ``readme-files`` run the documented
#: ``config/`` files as written (``/tmp/connect-local/…``, topic ``connect-local``, group
#: ``connect-local-cluster``) and the demo's connectors (topic ``connect-demo``, which
#: ``connect-grpc dev`` deletes and recreates, group ``connect-demo-file-sink``).
SHARED_NAMES = {
    "readme-files": (
        "tests/integration/test_ctl.py",
        "tests/integration/test_dev_demo.py",
        "tests/integration/test_readme_commands.py",
        "tests/integration/test_secrets.py",
    ),
}
#: The modules that use the session's shared standalone worker or 3-worker cluster
#: (``tests/integration/conftest.py``): on one xdist worker, so that each starts once per
#: session. The integration conftest refuses a session whose modules use them unlisted.
SHARED_WORKER_MODULES = (
    "tests/integration/test_auto_restart.py",
    "tests/integration/test_auto_restart_failover.py",
    "tests/integration/test_bad_inputs.py",
    "tests/integration/test_client.py",
    "tests/integration/test_ctl.py",
    "tests/integration/test_ctl_apply.py",
    "tests/integration/test_etags.py",
    "tests/integration/test_follower_pause.py",
    "tests/integration/test_go_client.py",
    "tests/integration/test_kill_pipeline.py",
    "tests/integration/test_lifecycle.py",
    "tests/integration/test_loggers.py",
    "tests/integration/test_offsets.py",
    "tests/integration/test_override_policy_and_schema_content.py",
    "tests/integration/test_patch_config.py",
    "tests/integration/test_pipeline_validation.py",
    "tests/integration/test_preview.py",
    "tests/integration/test_record_pipeline.py",
    "tests/integration/test_restart.py",
    "tests/integration/test_rewind_by_time.py",
    "tests/integration/test_topic_creation.py",
    "tests/integration/test_topic_tracking.py",
)

#: The modules that use the session's shared TLS workers (``tests/integration/tls_workers.py``):
#: on one xdist worker, one after the other, so that each TLS worker starts once.
SHARED_TLS_WORKER_MODULES = (
    "tests/integration/test_ctl_tls.py",
    "tests/integration/test_go_client_tls.py",
    "tests/integration/test_security.py",
)

#: The modules that use the session's shared worker with exactly-once source support and
#: Kafka Connect's Java plugins (``tests/integration/java_eos_worker.py``): on one xdist
#: worker, one after the other, so that it starts once.
SHARED_JAVA_EOS_WORKER_MODULES = (
    "tests/integration/test_java_exactly_once_validation.py",
    "tests/integration/test_mirror_maker.py",
)

#: The modules that use the session's shared worker with Kafka Connect's Java plugins and the
#: plugins those modules compile (``tests/integration/java_worker.py``): on one xdist worker,
#: one after the other, so that it starts once.
SHARED_JAVA_WORKER_MODULES = (
    "tests/integration/test_debezium_validation.py",
    "tests/integration/test_java_auto_restart.py",
    "tests/integration/test_java_connectors.py",
    "tests/integration/test_java_plugin_bad_inputs.py",
    "tests/integration/test_java_preview.py",
    "tests/integration/test_java_task_reports.py",
    "tests/integration/test_java_tasks_grpc.py",
)


def _scopes() -> dict[str, str]:
    """Each module of a group, or of the shared workers, to the name of the xdist scope it
    runs in; groups that share a module are one scope (test_ctl is in both)."""
    groups = [set(modules) for modules in SHARED_NAMES.values()]
    groups.append(set(SHARED_WORKER_MODULES))
    groups.append(set(SHARED_TLS_WORKER_MODULES))
    groups.append(set(SHARED_JAVA_EOS_WORKER_MODULES))
    groups.append(set(SHARED_JAVA_WORKER_MODULES))
    merged: list[set[str]] = []
    for group in groups:
        overlapping = [other for other in merged if other & group]
        for other in overlapping:
            merged.remove(other)
            group |= other
        merged.append(group)
    return {module: f"one-process-{index}" for index, group in enumerate(merged)
            for module in group}


_GROUP_OF = _scopes()

_SHARED_BROKER = pytest.StashKey[tuple[LocalKafka, Path]]()


class _Span:
    """When this pytest process's session started."""

    def __init__(self, started: float) -> None:
        self.started = started


_SPAN = pytest.StashKey[_Span]()
#: The modules this process ran tests of (an xdist process reports their number).
_SPANS_MODULES: set[str] = set()
#: The controller's record of each xdist process: its id → (seconds, modules).
_PROCESS_SPANS: dict[str, tuple[float, int]] = {}
#: Each module this process ran: its first test's start and its last test's end (module
#: fixtures' setup and teardown included), monotonic seconds.
_MODULE_SPANS: dict[str, list[float]] = {}
#: The controller's record of every process's modules: module → seconds.
_MODULE_SECONDS: dict[str, float] = {}
#: How many of the slowest modules the summary lists.
SLOWEST_MODULES = 25


def _is_xdist_controller(config: pytest.Config) -> bool:
    """True in the process that hands tests to xdist workers (not in a worker, and not
    in a run without xdist)."""
    distributed = config.getoption("dist", default="no") != "no"
    return distributed and not hasattr(config, "workerinput") and not config.option.collectonly


def _selects_integration_tests(config: pytest.Config) -> bool:
    """Whether the command line's paths include integration tests (``-k`` aside)."""
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::", 1)[0]).resolve()
        if path == INTEGRATION_DIR or INTEGRATION_DIR in path.parents or path in (
            INTEGRATION_DIR.parents
        ):
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    _prepare_class_archive(config)
    if (
        not _is_xdist_controller(config)
        or os.environ.get(EXTERNAL_BROKER_ENV)
        or os.environ.get(SHARED_BROKER_ENV)
        or not _selects_integration_tests(config)
    ):
        return
    data_dir = Path(tempfile.mkdtemp(prefix="connect-grpc-test-kafka-"))
    # Started on the main thread: die_with_parent ties the broker to the starting thread.
    broker = LocalKafka(data_dir, die_with_parent=True)
    try:
        broker.start(timeout=BROKER_START_TIMEOUT_S)
    except BaseException:
        shutil.rmtree(data_dir, ignore_errors=True)
        raise
    config.stash[_SHARED_BROKER] = (broker, data_dir)
    # The xdist workers, spawned after configure, inherit the controller's environment.
    os.environ[SHARED_BROKER_ENV] = broker.bootstrap_servers
    os.environ[START_LOCK_ENV] = str(data_dir / "worker-start.lock")


def _prepare_class_archive(config: pytest.Config) -> None:
    """Gives every Spark driver this session starts the test JVM options
    (``connect_grpc.testing.class_archive``) through ``PYSPARK_SUBMIT_ARGS``, unless the
    environment sets it: with the class-data archive once the cache has it. A missing
    archive is dumped first under xdist (its processes take the environment they start
    with), in the background otherwise (drivers started meanwhile go without it)."""
    if (
        hasattr(config, "workerinput")  # an xdist worker inherits the controller's
        or not _selects_integration_tests(config)
        or os.environ.get(class_archive.SUBMIT_ARGS_ENV)
    ):
        return
    archive = class_archive.default_archive()  # the product's, made by `make install`

    def use_archive() -> None:
        if archive is not None and class_archive.ensure_archive(archive):
            os.environ[class_archive.SUBMIT_ARGS_ENV] = class_archive.submit_args(archive)

    os.environ[class_archive.SUBMIT_ARGS_ENV] = class_archive.submit_args(archive)
    if archive is None or archive.is_file():
        return
    if _is_xdist_controller(config):
        use_archive()
    else:
        threading.Thread(target=use_archive, name="class-archive", daemon=True).start()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SPAN] = _Span(time.monotonic())


def pytest_runtest_logstart(nodeid: str) -> None:
    now = time.monotonic()
    _MODULE_SPANS.setdefault(nodeid.split("::", 1)[0], [now, now])


def pytest_runtest_logfinish(nodeid: str) -> None:
    module = nodeid.split("::", 1)[0]
    _SPANS_MODULES.add(module)
    _MODULE_SPANS.setdefault(module, [time.monotonic(), 0.0])[1] = time.monotonic()


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Here, not at unconfigure: the broker's last log line must come before the summary
    # line, which CI reads as the last line. Every xdist worker has finished by now.
    _stop_shared_broker(session.config)
    span = session.config.stash.get(_SPAN, None)
    workeroutput = getattr(session.config, "workeroutput", None)
    if span is not None and workeroutput is not None:  # an xdist process: tell the controller
        workeroutput["span_s"] = time.monotonic() - span.started
        workeroutput["modules"] = len(_SPANS_MODULES)
        workeroutput["module_s"] = _module_seconds()
    elif workeroutput is None:
        _MODULE_SECONDS.update(_module_seconds())


def _module_seconds() -> dict[str, float]:
    return {module: end - start for module, (start, end) in _MODULE_SPANS.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """Keeps what each xdist process reported, for the summary."""
    output = getattr(node, "workeroutput", {})
    if "span_s" in output:
        _PROCESS_SPANS[node.gateway.id] = (output["span_s"], output["modules"])
        _MODULE_SECONDS.update(output.get("module_s", {}))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Under xdist, how long each process ran and how many modules: the suite lasts as
    long as the longest, so this is where a slow run's time is to be found."""
    if _PROCESS_SPANS:
        terminalreporter.section("pytest-xdist processes")
        for process, (seconds, modules) in sorted(_PROCESS_SPANS.items()):
            minutes, rest = divmod(round(seconds), 60)
            terminalreporter.write_line(f"{process}: {minutes}:{rest:02d} for {modules} modules")
    if len(_MODULE_SECONDS) > 1:
        slowest = sorted(_MODULE_SECONDS.items(), key=lambda item: -item[1])[:SLOWEST_MODULES]
        terminalreporter.section(f"slowest {len(slowest)} modules (first start to last end)")
        for module, seconds in slowest:
            terminalreporter.write_line(f"{seconds:7.1f}s {module}")


def pytest_unconfigure(config: pytest.Config) -> None:
    _stop_shared_broker(config)  # when the session did not get as far as finishing


def _stop_shared_broker(config: pytest.Config) -> None:
    started = config.stash.get(_SHARED_BROKER, None)
    if started is None:
        return
    del config.stash[_SHARED_BROKER]
    broker, data_dir = started
    os.environ.pop(SHARED_BROKER_ENV, None)
    os.environ.pop(START_LOCK_ENV, None)
    try:
        broker.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own choice
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]

    # In collection order: the integration modules, which take minutes each, before the
    # unit modules, which fill the gaps at the end. (xdist's default puts the modules with
    # the most tests first: unit modules, then a tail of few-test, minutes-long ones.)
    config.option.loadscopereorder = False

    class ModulesAndSharedNames(LoadFileScheduling):  # type: ignore[misc]
        """``--dist loadfile``, with the modules of a :data:`SHARED_NAMES` group as one."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return _GROUP_OF.get(module, module)

    return ModulesAndSharedNames(config, log)

"""``ctl apply`` of desired state without a worker: specs read from files and directories
(JSON, YAML, properties, Strimzi's KafkaConnector), config diffs with secrets hidden, and
the reconciliation against a fake client that keeps etags as the worker does (a write that
changes nothing keeps the etag; a stale etag is ABORTED). The same against a live worker:
tests/integration/test_ctl_apply.py."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from connect_grpc.client.convert import ConnectorListing
from connect_grpc.ctl.apply_diff import HIDDEN, diff_config, diff_lines, shown_value, target_of
from connect_grpc.ctl.apply_specs import (
    MARKER_KEY,
    MARKER_VALUE,
    OFFSETS_KEY,
    STATE_KEY,
    load_spec,
    spec_files,
)
from connect_grpc.ctl.apply_state import (
    CONFIG_CHANGED,
    CREATED,
    PRUNED,
    STATE_CHANGED,
    Report,
    apply_specs,
    read_specs,
)
from connect_grpc.ctl.exit_codes import ExitCode
from connect_grpc.ctl.render import Output
from connect_grpc.ctl.root import ctl
from connect_grpc.kernel.domain import (
    ConfigInfo,
    ConfigInfos,
    ConfigKeyInfo,
    ConfigValueInfo,
    ConnectorInfo,
    ConnectorStatus,
    ConnectorType,
    CreateResult,
    InstanceStatus,
    PutConfigResult,
    State,
    TargetState,
)
from connect_grpc.kernel.errors import AbortedError, AlreadyExistsError, InvalidArgumentError

# ---------------------------------------------------------------------------- specs


def write(path: Path, document: Any) -> Path:
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def test_a_yaml_spec_holds_config_state_and_initial_offsets(tmp_path: Path) -> None:
    path = write(tmp_path / "a.yaml", (
        "name: orders\nstate: paused\nconfig:\n  connector.class: FileStreamSource\n"
        "  tasks.max: 1\n  enabled: true\n"
        "initial_offsets:\n  - partition: {filename: /x}\n    offset: {position: 7}\n"))
    spec = load_spec(path)
    assert (spec.name, spec.state, spec.initial_state) == (
        "orders", TargetState.PAUSED, TargetState.PAUSED)
    assert spec.config == {"connector.class": "FileStreamSource", "tasks.max": "1",
                           "enabled": "true", "name": "orders"}
    assert spec.initial_offsets is not None and spec.initial_offsets[0].offset == {"position": 7}


def test_a_plain_connector_file_is_a_spec_without_a_state(tmp_path: Path) -> None:
    flat = load_spec(write(tmp_path / "c.json", {"name": "c", "connector.class": "X"}))
    assert (flat.state, flat.initial_state, flat.config) == (
        None, TargetState.STARTED, {"name": "c", "connector.class": "X"})
    request = load_spec(write(tmp_path / "r.json", {
        "name": "r", "config": {"connector.class": "X"}, "initial_state": "STOPPED"}))
    assert (request.state, request.initial_state) == (None, TargetState.STOPPED)


def test_a_properties_spec_says_its_state_and_offsets_in_keys_apply_removes(
    tmp_path: Path
) -> None:
    offsets = json.dumps([{"partition": {"task": 0}, "offset": {"seq": 2**63 - 1}}])
    path = write(tmp_path / "p.properties",
                 f"name=p\nconnector.class=X\n{STATE_KEY}=STOPPED\n{OFFSETS_KEY}={offsets}\n")
    spec = load_spec(path)
    assert spec.config == {"name": "p", "connector.class": "X"}
    assert spec.state is TargetState.STOPPED
    assert spec.initial_offsets is not None and spec.initial_offsets[0].offset == {
        "seq": 2**63 - 1}


def test_strimzi_kafkaconnector_is_read_and_what_it_cannot_honour_refused(
    tmp_path: Path
) -> None:
    path = write(tmp_path / "k.yaml", (
        "apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaConnector\n"
        "metadata:\n  name: k\n  labels: {strimzi.io/cluster: c}\n"
        "spec:\n  class: FileStreamSource\n  tasksMax: 2\n  state: stopped\n"
        "  config: {file: /tmp/x, topic: t}\n"))
    spec = load_spec(path)
    assert spec.config == {"file": "/tmp/x", "topic": "t", "connector.class": "FileStreamSource",
                           "tasks.max": "2", "name": "k"}
    assert spec.state is TargetState.STOPPED
    write(path, path.read_text().replace("  state: stopped\n", "  autoRestart: {enabled: true}\n"))
    with pytest.raises(InvalidArgumentError) as refused:
        load_spec(path)
    assert refused.value.violations[0].field == f"{path}: spec.autoRestart"


@pytest.mark.parametrize(("document", "field"), [
    ({"name": "c", "config": {"a": "b"}, "state": "SLEEPING"}, "state"),
    ({"name": "c", "config": {"a": "b"}, "state": "PAUSED", "initial_state": "STOPPED"},
     "initial_state"),
    ({"name": "c", "config": {MARKER_KEY: MARKER_VALUE}}, f"config.{MARKER_KEY}"),
    ({"name": "c", "config": {"name": "d"}}, "config.name"),
    ({"config": {"a": "b"}}, "name"),
])
def test_a_bad_spec_names_its_file_and_field(
    tmp_path: Path, document: dict[str, Any], field: str
) -> None:
    path = write(tmp_path / "bad.json", document)
    with pytest.raises(InvalidArgumentError) as refused:
        load_spec(path)
    assert refused.value.violations[0].field == f"{path}: {field}"


def test_a_directory_gives_its_spec_files_in_name_order(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.json", "c.properties", "README.md", ".hidden.yaml"):
        write(tmp_path / name, "x")
    (tmp_path / "sub").mkdir()
    assert [p.name for p in spec_files([tmp_path])] == ["a.json", "b.yaml", "c.properties"]


# ---------------------------------------------------------------------------- diffs


def test_a_config_diff_lists_added_changed_and_removed_keys_never_the_marker() -> None:
    diff = diff_config({"a": "1", "b": "2", "gone": "x", MARKER_KEY: MARKER_VALUE},
                       {"a": "1", "b": "3", "new": "y"})
    assert (diff.added, diff.changed, diff.removed) == (
        {"new": "y"}, {"b": ("2", "3")}, {"gone": "x"})
    assert diff_lines(diff) == ["  ~ b: 2 -> 3", "  - gone: x", "  + new: y"]
    assert not diff_config({"a": "1", MARKER_KEY: MARKER_VALUE}, {"a": "1"})


def test_secrets_are_hidden_and_references_shown_as_written() -> None:
    secrets, defined = frozenset({"db.password"}), frozenset({"db.password", "db.user"})
    assert shown_value("db.password", "hunter2", secrets, defined) == HIDDEN
    assert shown_value("db.password", "${file:/s.properties:pw}", secrets, defined) == (
        "${file:/s.properties:pw}")
    assert shown_value("db.user", "me", secrets, defined) == "me"
    assert shown_value("my.secret", "s3", secrets, defined) == HIDDEN  # undefined, by name
    diff = diff_config({"db.password": "old"}, {"db.password": "new"})
    assert diff_lines(diff, secrets, defined) == [f"  ~ db.password: {HIDDEN} (changed)"]


def test_a_reported_state_tells_the_target_state_only_when_it_can() -> None:
    assert target_of(State.RUNNING) is TargetState.STARTED
    assert target_of(State.PAUSED) is TargetState.PAUSED
    assert target_of(State.STOPPED) is TargetState.STOPPED
    assert target_of(State.UNASSIGNED) is None and target_of(None) is None


# ---------------------------------------------------------------------------- reconciling


@dataclass
class Held:
    config: dict[str, str]
    target: TargetState
    version: int = 0


@dataclass
class FakeClient:
    """Keeps connectors as the worker does for etags: content-addressed, ABORTED when a
    conditional write's etag is stale; counts every write."""

    held: dict[str, Held] = field(default_factory=dict)
    writes: list[str] = field(default_factory=list)
    #: name → state a status reports instead of the target's (a lagging status)
    reported: dict[str, State] = field(default_factory=dict)
    #: called after list_connectors read: a concurrent writer
    after_list: Any = None

    def etag(self, name: str) -> str:
        held = self.held[name]
        text = json.dumps([name, held.config, held.target.value, held.version], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def info(self, name: str) -> ConnectorInfo:
        return ConnectorInfo(name, dict(self.held[name].config), (), ConnectorType.SOURCE,
                             self.etag(name))

    def list_connectors(self, expand_status: bool, expand_info: bool) -> list[ConnectorListing]:
        found = []
        for name in sorted(self.held):
            state = self.reported.get(name) or {
                TargetState.STARTED: State.RUNNING, TargetState.PAUSED: State.PAUSED,
                TargetState.STOPPED: State.STOPPED}[self.held[name].target]
            status = ConnectorStatus(name, InstanceStatus(state, "w"), (),
                                     ConnectorType.SOURCE)
            found.append(ConnectorListing(name, self.info(name), status))
        if self.after_list is not None:
            self.after_list(self)
        return found

    def _require(self, name: str, etag: str) -> None:
        if etag and etag != self.etag(name):
            raise AbortedError("etag mismatch", self.etag(name))

    def create_connector(self, name: str, config: dict[str, str], state: TargetState,
                         offsets: Any) -> CreateResult:
        if name in self.held:
            raise AlreadyExistsError(f"Connector {name} already exists")
        self.writes.append(f"create {name}")
        self.held[name] = Held(dict(config), state, 1)
        return CreateResult(self.info(name), "", ())

    def put_connector_config(self, name: str, config: dict[str, str], etag: str = ""
                             ) -> PutConfigResult:
        self._require(name, etag)
        self.writes.append(f"put {name}")
        self.held[name].config = dict(config)
        return PutConfigResult(self.info(name), False)

    def _target(self, name: str, state: TargetState, etag: str) -> str:
        self._require(name, etag)
        self.writes.append(f"{state.value} {name}")
        self.held[name].target = state
        return self.etag(name)

    def resume_connector(self, name: str, etag: str = "") -> str:
        return self._target(name, TargetState.STARTED, etag)

    def pause_connector(self, name: str, etag: str = "") -> str:
        return self._target(name, TargetState.PAUSED, etag)

    def stop_connector(self, name: str, etag: str = "") -> str:
        return self._target(name, TargetState.STOPPED, etag)

    def delete_connector(self, name: str, etag: str = "") -> None:
        self._require(name, etag)
        self.writes.append(f"delete {name}")
        del self.held[name]

    def validate_config(self, config: dict[str, str]) -> ConfigInfos:
        infos = [ConfigInfo(ConfigKeyInfo("db.password", "PASSWORD", False, None, "HIGH", ""),
                            ConfigValueInfo("db.password", config.get("db.password")))]
        if config.get("tasks.max") == "two":
            infos.append(ConfigInfo(None, ConfigValueInfo("tasks.max", "two", ("not a number",))))
        return ConfigInfos("X", len(infos) - 1, (), tuple(infos))


def spec_dir(tmp_path: Path, **connectors: dict[str, Any]) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for name, document in connectors.items():
        write(folder / f"{name}.json", {"name": name, **document})
    return folder


def reconcile(client: FakeClient, folder: Path, *, prune: bool = False,
              dry_run: bool = False) -> Report:
    output = Output()
    report = Report()
    specs = read_specs([folder], output, report)
    return apply_specs(client, output, specs, prune=prune, dry_run=dry_run,  # type: ignore[arg-type]
                       report=report)


SOURCE = {"connector.class": "X", "tasks.max": "1"}


def test_apply_creates_then_changes_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeClient()
    folder = spec_dir(tmp_path, a={"config": SOURCE, "state": "PAUSED"}, b={"config": SOURCE})
    first = reconcile(client, folder)
    assert [o.results for o in first.outcomes] == [[CREATED], [CREATED]]
    assert client.held["a"].target is TargetState.PAUSED
    assert client.held["a"].config[MARKER_KEY] == MARKER_VALUE
    assert capsys.readouterr().out.splitlines() == [
        "connector a created (PAUSED)", "connector b created (RUNNING)"]
    client.writes.clear()
    again = reconcile(client, folder)
    assert [o.results for o in again.outcomes] == [[], []] and client.writes == []
    assert again.exit_code is ExitCode.OK
    assert capsys.readouterr().out.splitlines() == ["connector a unchanged",
                                                    "connector b unchanged"]


def test_apply_changes_config_and_state_only_where_they_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeClient()
    reconcile(client, spec_dir(tmp_path, a={"config": SOURCE, "state": "RUNNING"},
                               b={"config": SOURCE, "state": "RUNNING"}))
    capsys.readouterr()
    folder = spec_dir(tmp_path, a={"config": {**SOURCE, "tasks.max": "2"}, "state": "RUNNING"},
                      b={"config": SOURCE, "state": "STOPPED"})
    client.writes.clear()
    report = reconcile(client, folder)
    assert report.results_of("a") == [CONFIG_CHANGED]
    assert report.results_of("b") == [STATE_CHANGED]
    assert client.writes == ["put a", "STOPPED b"]
    assert client.held["a"].config[MARKER_KEY] == MARKER_VALUE  # kept by the put
    assert capsys.readouterr().out.splitlines() == [
        "connector a config changed (tasks.max)",
        "connector b state changed (RUNNING -> STOPPED)"]


def test_a_status_that_does_not_tell_the_state_is_settled_by_the_etag(tmp_path: Path) -> None:
    client = FakeClient()
    folder = spec_dir(tmp_path, a={"config": SOURCE, "state": "RUNNING"})
    reconcile(client, folder)
    client.reported["a"] = State.UNASSIGNED
    assert reconcile(client, folder).results_of("a") == []  # same etag back: unchanged
    client.held["a"].target = TargetState.PAUSED
    assert reconcile(client, folder).results_of("a") == [STATE_CHANGED]


def test_dry_run_shows_the_diff_hides_secrets_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeClient()
    reconcile(client, spec_dir(tmp_path, a={"config": {**SOURCE, "db.password": "old",
                                                       "gone": "1"}}))
    capsys.readouterr()
    client.writes.clear()
    folder = spec_dir(tmp_path, a={"config": {**SOURCE, "db.password": "new", "tasks.max": "3",
                                              "ref": "${env:X}"}, "state": "PAUSED"},
                      c={"config": {**SOURCE, "db.password": "pw"}})
    report = reconcile(client, folder, dry_run=True)
    assert client.writes == []
    assert report.results_of("a") == [CONFIG_CHANGED, STATE_CHANGED]
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "connector a config changed (db.password, gone, ref, tasks.max); "
        "state changed (RUNNING -> PAUSED) (dry run)",
        f"  ~ db.password: {HIDDEN} (changed)",
        "  - gone: 1",
        "  + ref: ${env:X}",
        "  ~ tasks.max: 1 -> 3",
        "  state: RUNNING -> PAUSED",
        "connector c created (RUNNING) (dry run)",
        "  + connector.class: X",
        f"  + db.password: {HIDDEN}",
        "  + name: c",
        "  + tasks.max: 1",
    ]
    assert "old" not in out and "new" not in out and "pw" not in out


def test_dry_run_lists_every_invalid_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                           ) -> None:
    report = reconcile(FakeClient(), spec_dir(tmp_path, a={"config": {**SOURCE,
                                                                      "tasks.max": "two"}}),
                       dry_run=True)
    assert report.exit_code is ExitCode.INVALID_ARGUMENT
    err = capsys.readouterr().err
    assert "connector a has 1 invalid config value" in err and "config.tasks.max" in err


def test_a_concurrent_writer_is_not_overwritten_and_the_others_still_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeClient()
    reconcile(client, spec_dir(tmp_path, a={"config": SOURCE}, b={"config": SOURCE}))
    capsys.readouterr()

    def concurrent(fake: FakeClient) -> None:
        fake.held["a"].config = {**fake.held["a"].config, "tasks.max": "9"}

    client.after_list = concurrent
    report = reconcile(client, spec_dir(tmp_path, a={"config": {**SOURCE, "x": "1"}},
                                        b={"config": {**SOURCE, "x": "1"}}))
    assert client.held["a"].config["tasks.max"] == "9" and "x" not in client.held["a"].config
    assert client.held["b"].config["x"] == "1"
    assert report.exit_code is ExitCode.ABORTED
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["connector b config changed (x)"]
    assert "Error: ABORTED (ETAG_MISMATCH): connector a was changed by another writer" in (
        captured.err)


def test_prune_deletes_only_what_apply_created_and_no_spec_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeClient()
    client.held["by-hand"] = Held({"connector.class": "X"}, TargetState.STARTED)
    reconcile(client, spec_dir(tmp_path, a={"config": SOURCE}, b={"config": SOURCE}))
    folder = spec_dir(tmp_path, a={"config": SOURCE})
    capsys.readouterr()
    client.writes.clear()
    dry = reconcile(client, folder, prune=True, dry_run=True)
    assert dry.results_of("b") == [PRUNED] and client.writes == []
    report = reconcile(client, folder, prune=True)
    assert report.results_of("b") == [PRUNED]
    assert sorted(client.held) == ["a", "by-hand"]
    assert capsys.readouterr().out.splitlines() == [
        "connector a unchanged (dry run)", "connector b pruned (dry run)",
        "connector a unchanged", "connector b pruned"]


def test_prune_deletes_nothing_when_a_spec_cannot_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeClient()
    reconcile(client, spec_dir(tmp_path, a={"config": SOURCE}, b={"config": SOURCE}))
    folder = spec_dir(tmp_path, a={"config": SOURCE})
    write(folder / "b.json", "{not json")
    report = reconcile(client, folder, prune=True)
    assert sorted(client.held) == ["a", "b"]
    assert report.exit_code is ExitCode.INVALID_ARGUMENT
    assert "nothing pruned" in capsys.readouterr().err


def test_a_name_in_two_specs_is_refused_and_neither_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeClient()
    folder = spec_dir(tmp_path, a={"config": SOURCE})
    write(folder / "other.json", {"name": "a", "config": SOURCE})
    report = reconcile(client, folder)
    assert client.held == {} and report.exit_code is ExitCode.INVALID_ARGUMENT
    assert "connector a is in several specs" in capsys.readouterr().err


def test_a_connector_is_paused_or_stopped_before_and_resumed_after_its_new_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeClient()
    reconcile(client, spec_dir(tmp_path, a={"config": SOURCE, "state": "RUNNING"}))
    client.writes.clear()
    stopped = {"config": {**SOURCE, "tasks.max": "2"}, "state": "STOPPED"}
    assert reconcile(client, spec_dir(tmp_path, a=stopped)).results_of("a") == [
        CONFIG_CHANGED, STATE_CHANGED]
    assert client.writes == ["STOPPED a", "put a"]
    client.writes.clear()
    running = {"config": SOURCE, "state": "RUNNING"}
    reconcile(client, spec_dir(tmp_path, a=running))
    assert client.writes == ["put a", "STARTED a"]
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "connector a config changed (tasks.max); state changed (RUNNING -> STOPPED)",
        "connector a config changed (tasks.max); state changed (STOPPED -> RUNNING)"]


def test_apply_of_a_directory_takes_no_if_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                ) -> None:
    monkeypatch.delenv("CONNECT_GRPC_TARGET", raising=False)
    folder = spec_dir(tmp_path, a={"config": SOURCE})
    result = CliRunner().invoke(ctl, ["--target", "127.0.0.1:9", "apply", "-f", str(folder),
                                      "--if-match", "abc"])
    assert result.exit_code == 2
    assert "applying a desired state uses the etag of each connector it reads" in result.stderr

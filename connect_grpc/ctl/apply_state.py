"""``ctl apply`` of desired state: every spec's connector brought to its config and target
state, created with its initial state and offsets when it does not exist, and (``--prune``)
the connectors an earlier apply created that no spec names any longer deleted.

Each write is conditional on the etag read with the connector (AIP-154), so a change a
concurrent writer made in between is never overwritten: that connector is reported, and the
others still apply. A connector whose config and state already match is not written at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from rich.text import Text

from connect_grpc.client import ConnectClient
from connect_grpc.client.convert import ConnectorListing
from connect_grpc.ctl.apply_diff import (
    config_changed_text,
    created_lines,
    defined_keys,
    diff_config,
    diff_lines,
    result_line,
    secret_keys,
    state_change_text,
    target_of,
)
from connect_grpc.ctl.apply_specs import (
    MARKER_KEY,
    MARKER_VALUE,
    ConnectorSpec,
    load_spec,
    spec_files,
    state_name,
)
from connect_grpc.ctl.exit_codes import ExitCode, Failure, failure_of
from connect_grpc.ctl.render import Output
from connect_grpc.kernel.domain import ConfigInfos, State, TargetState
from connect_grpc.kernel.errors import (
    AbortedError,
    AlreadyExistsError,
    ConnectError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
)

CREATED = "created"
CONFIG_CHANGED = "config changed"
STATE_CHANGED = "state changed"
UNCHANGED = "unchanged"
PRUNED = "pruned"


@dataclass(slots=True)
class Outcome:
    """What apply did (or, dry, would do) to one connector."""

    name: str
    #: Of CREATED, CONFIG_CHANGED, STATE_CHANGED, PRUNED; empty: unchanged.
    results: list[str] = field(default_factory=list)
    #: Each result as the line says it (``state changed (PAUSED -> RUNNING)``).
    texts: list[str] = field(default_factory=list)
    failure: Failure | None = None


@dataclass(slots=True)
class Report:
    outcomes: list[Outcome] = field(default_factory=list)
    #: Failures that are no one connector's (a spec that cannot be read).
    failures: list[Failure] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        """The first failure's, as the other bulk commands; OK when there is none."""
        every = [*self.failures, *(o.failure for o in self.outcomes if o.failure is not None)]
        return every[0].exit_code if every else ExitCode.OK

    def results_of(self, name: str) -> list[str]:
        return next(outcome.results for outcome in self.outcomes if outcome.name == name)


def read_specs(paths: Sequence[Path], output: Output, report: Report) -> list[ConnectorSpec]:
    """Every spec of ``paths``; a file that cannot be read, or a name two files give, is a
    failure of the report (and neither file's connector is applied)."""
    specs: list[ConnectorSpec] = []
    for path in spec_files(paths):
        try:
            spec = load_spec(path)
        except ConnectError as error:
            report.failures.append(_shown_failure(output, failure_of(error)))
            continue
        for ignored in spec.ignored:
            output.note(f"{path}: {ignored} is not a field of a spec: ignored")
        specs.append(spec)
    by_name: dict[str, list[ConnectorSpec]] = {}
    for spec in specs:
        by_name.setdefault(spec.name, []).append(spec)
    for name, found in by_name.items():
        if len(found) > 1:
            files = ", ".join(str(spec.source) for spec in found)
            duplicate = InvalidArgumentError(f"connector {name} is in several specs: {files}")
            report.failures.append(_shown_failure(output, failure_of(duplicate)))
    return [spec for spec in specs if len(by_name[spec.name]) == 1]


def apply_specs(
    client: ConnectClient, output: Output, specs: Sequence[ConnectorSpec], *,
    prune: bool, dry_run: bool, report: Report | None = None,
) -> Report:
    """Brings each spec's connector to its spec, then prunes; says per connector what it did
    (stdout) or why it failed (stderr). A failure of one connector does not stop the others;
    ``--prune`` deletes nothing when a spec could not be read (its connector would look
    gone)."""
    report = report if report is not None else Report()
    current = {entry.name: entry for entry in
               client.list_connectors(expand_status=True, expand_info=True)}
    applier = _Applier(client, output, dry_run)
    for spec in specs:
        report.outcomes.append(
            applier.run(spec.name, partial(applier.one, spec, current.get(spec.name)))
        )
    if not prune:
        return report
    if report.failures:
        output.note("nothing pruned: a spec could not be read, so which connectors are gone "
                    "is not known")
        return report
    wanted = {spec.name for spec in specs}
    for name, entry in sorted(current.items()):
        if name in wanted or entry.info is None or not is_marked(entry.info.config):
            continue
        report.outcomes.append(applier.run(name, partial(applier.prune, entry)))
    return report


def is_marked(config: Mapping[str, str]) -> bool:
    """Whether an apply created the connector of ``config``."""
    return config.get(MARKER_KEY) == MARKER_VALUE


class _Applier:
    def __init__(self, client: ConnectClient, output: Output, dry_run: bool) -> None:
        self._client = client
        self._output = output
        self._dry_run = dry_run

    def run(self, name: str, action: Callable[[Outcome], None]) -> Outcome:
        """Runs ``action`` for connector ``name``; its result line, or its failure."""
        outcome = Outcome(name)
        try:
            action(outcome)
        except ConnectError as error:
            if outcome.results:  # what was done before the failure is said first
                self._say(result_line(name, outcome.texts, self._dry_run))
            outcome.failure = _shown_failure(self._output, _failure_for(name, error))
        return outcome

    def one(self, spec: ConnectorSpec, entry: ConnectorListing | None, outcome: Outcome) -> None:
        if entry is None or entry.info is None:
            self._create(spec, outcome)
            return
        info = entry.info
        reported = entry.status.connector.state if entry.status is not None else None
        wanted = dict(spec.config)
        if MARKER_KEY in info.config:  # kept: the marker says who created it, not the spec
            wanted[MARKER_KEY] = info.config[MARKER_KEY]
        diff = diff_config(info.config, wanted)
        etag = info.etag
        lines: list[str] = []
        # Paused or stopped first, then the new config, so that the new config never runs;
        # the config first when it is to run, so that the old one does not run again.
        state_first = spec.state is not None and spec.state is not TargetState.STARTED
        if state_first and spec.state is not None:
            etag = self._hold_state(spec.name, spec.state, reported, etag, outcome, lines)
        if diff:
            if self._dry_run:
                infos = self._validated(spec, wanted)
                lines[:0] = diff_lines(diff, secret_keys(infos), defined_keys(infos))
            else:
                etag = self._client.put_connector_config(spec.name, wanted, etag=etag).info.etag
            self._done(outcome, CONFIG_CHANGED, config_changed_text(diff))
        if not state_first and spec.state is not None:
            self._hold_state(spec.name, spec.state, reported, etag, outcome, lines)
        self._say(result_line(spec.name, outcome.texts, self._dry_run))
        for line in lines:
            self._say(line)

    def _hold_state(
        self, name: str, wanted: TargetState, reported: State | None, etag: str,
        outcome: Outcome, lines: list[str],
    ) -> str:
        """Sets the target state unless the status shows it already; returns the etag
        after. When the status does not tell (UNASSIGNED, RESTARTING), the write is made:
        the etag it answers is the one it was given when the target state was already
        ``wanted``, and the connector is said unchanged."""
        now = target_of(reported)
        if now is wanted:
            return etag
        change = state_change_text(now, reported, wanted)
        if self._dry_run:
            lines.append(f"  state: {change}")
            self._done(outcome, STATE_CHANGED, f"state changed ({change})")
            return etag
        call = {TargetState.STARTED: self._client.resume_connector,
                TargetState.PAUSED: self._client.pause_connector,
                TargetState.STOPPED: self._client.stop_connector}[wanted]
        after = call(name, etag=etag)
        if after != etag:
            self._done(outcome, STATE_CHANGED, f"state changed ({change})")
        return after

    def _create(self, spec: ConnectorSpec, outcome: Outcome) -> None:
        config = {**spec.config, MARKER_KEY: MARKER_VALUE}
        state = state_name(spec.initial_state)
        offsets = (f", initial offsets for {len(spec.initial_offsets)} partition"
                   f"{'' if len(spec.initial_offsets) == 1 else 's'}"
                   if spec.initial_offsets is not None else "")
        if self._dry_run:
            infos = self._validated(spec, config)
            self._done(outcome, CREATED, f"created ({state}{offsets})")
            self._say(result_line(spec.name, outcome.texts, True))
            for line in created_lines(spec.config, secret_keys(infos), defined_keys(infos)):
                self._say(line)
            return
        created = self._client.create_connector(
            spec.name, config, spec.initial_state, spec.initial_offsets
        )
        self._done(outcome, CREATED, f"created ({state})")
        self._say(result_line(spec.name, outcome.texts, False))
        if created.offsets_message:
            self._say(f"  {created.offsets_message}")

    def prune(self, entry: ConnectorListing, outcome: Outcome) -> None:
        if not self._dry_run:
            etag = entry.info.etag if entry.info is not None else ""
            self._client.delete_connector(entry.name, etag=etag)
        self._done(outcome, PRUNED, PRUNED)
        self._say(result_line(entry.name, outcome.texts, self._dry_run))

    def _say(self, line: str) -> None:
        """A line as it is: values may hold brackets, which rich would read as markup."""
        self._output.line(Text(line))

    def _done(self, outcome: Outcome, result: str, text: str) -> None:
        """Records a result; the config's is said before the state's, whichever was
        written first."""
        at = 0 if result == CONFIG_CHANGED else len(outcome.results)
        outcome.results.insert(at, result)
        outcome.texts.insert(at, text)

    def _validated(self, spec: ConnectorSpec, config: dict[str, str]) -> ConfigInfos:
        """The config's definitions; InvalidArgumentError listing every error, as a dry run
        of a connector file says them."""
        infos = self._client.validate_config(config=config)
        errors = infos.all_errors()
        if errors:
            raise InvalidArgumentError(
                f"{spec.source}: connector {spec.name} has {len(errors)} invalid config "
                f"value{'s' if len(errors) > 1 else ''}",
                [FieldViolation(f"config.{key}", message) for key, message in errors],
            )
        return infos


def _failure_for(name: str, error: ConnectError) -> Failure:
    """The failure, said of its connector; a concurrent writer's change named as such."""
    failure = failure_of(error)
    if isinstance(error, AbortedError):
        message = (f"connector {name} was changed by another writer since apply read it: "
                   "not overwritten; run apply again to apply the spec to the change")
    elif isinstance(error, AlreadyExistsError):
        message = (f"connector {name} was created by another writer since apply read the "
                   "connectors: not overwritten; run apply again")
    elif isinstance(error, NotFoundError) and name in error.message:
        message = (f"connector {name} was deleted by another writer since apply read it; "
                   "run apply again")
    elif f"connector {name}" in failure.message:
        return failure
    else:
        message = f"connector {name}: {failure.message}"
    return dataclasses.replace(failure, message=message)


def _shown_failure(output: Output, failure: Failure) -> Failure:
    output.failure(failure)
    return failure

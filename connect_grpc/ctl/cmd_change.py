"""Commands that change connectors: ``apply``, ``patch``, ``pause|resume|stop|delete`` (by
name or regular expression), ``offsets get|alter|reset``."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from connect_grpc.config.connector_files import (
    ConnectorRequest,
    load_connector_file,
    load_offsets_file,
)
from connect_grpc.ctl import documents
from connect_grpc.ctl.apply_specs import MARKER_KEY, load_spec
from connect_grpc.ctl.apply_state import Report, apply_specs, is_marked, read_specs
from connect_grpc.ctl.exit_codes import ExitCode, failure_of
from connect_grpc.ctl.render import compact_json
from connect_grpc.ctl.session import (
    Session,
    complete_connector_names,
    matching,
    output_option,
    pass_session,
    regex_option,
)
from connect_grpc.kernel.domain import TargetState
from connect_grpc.kernel.errors import (
    ConnectError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
)

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
#: A spec file, or a directory of them.
SPECS = click.Path(exists=True, path_type=Path)


def if_match_option(what: str) -> Callable[[click.decorators.FC], click.decorators.FC]:
    """``--if-match ETAG``: the write is made only if the connector's etag (``describe
    connector``, ``get connectors -o wide``) is still ETAG (AIP-154); ABORTED otherwise."""
    return click.option(
        "--if-match", "if_match", metavar="ETAG", default="",
        help=f"Only {what} if the connector's etag (describe connector, get connectors -o "
             "wide) is still ETAG; otherwise change nothing and exit 10 (ABORTED).",
    )


def _with_new_etag(line: str, if_match: str, etag: str) -> str:
    """The command's line, with the connector's new etag when the write was conditional
    (a script chaining --if-match writes needs it)."""
    return f"{line} (etag {etag})" if if_match and etag else line


# ---------------------------------------------------------------------------- apply


@click.command()
@click.option("-f", "--file", "files", type=SPECS, multiple=True, required=True,
              help="A connector file or spec, or a directory of them (its .json, .yaml, .yml "
                   "and .properties files): a flat config or a create request, as "
                   "`connect-grpc standalone` reads them, a spec with a target state, or "
                   "Strimzi's KafkaConnector. Several: -f a.json b.yaml, or -f repeated "
                   "(-f a.json -f b.yaml), as kubectl takes them.")
@click.argument("more_files", metavar="[FILE]...", nargs=-1, type=SPECS)
@click.option("--dry-run", is_flag=True,
              help="Change nothing: validate, and show what apply would do (with a desired "
                   "state: the config keys added, changed and removed, secrets hidden, and the "
                   "state change).")
@click.option("--prune", is_flag=True,
              help="Also delete the connectors an earlier apply created that no spec given "
                   "names any longer (never a connector apply did not create).")
@if_match_option("replace the config (one -f, an existing connector)")
@pass_session
def apply(
    session: Session, files: tuple[Path, ...], more_files: tuple[Path, ...], dry_run: bool,
    prune: bool, if_match: str,
) -> None:
    """Create each file's connector, or replace its config if it exists; or, with a desired
    state, bring each connector to its spec.

    The files are JSON, YAML or Java properties, each a flat connector config (name=...,
    connector.class=...) or a create request ({"name", "config", "initial_state",
    "initial_offsets"}), read as `connect-grpc standalone` reads them. A new connector
    starts in the file's initial_state with its initial_offsets; for an existing one only
    the config changes (PutConnectorConfig).

    A directory, --prune, or a spec with a target state (state: RUNNING|PAUSED|STOPPED
    beside config; connect-grpc.state= in properties; a KafkaConnector) applies desired
    state: each connector is created (in its state, from its initial offsets), or its
    config and state are changed, only where they differ, each write conditional on the
    etag read with the connector; each line says created, config changed, state changed,
    unchanged or pruned.
    """
    files = (*files, *more_files)
    if if_match and len(files) != 1:
        raise click.UsageError("--if-match: an etag is one connector's: give exactly one -f")
    if prune or any(path.is_dir() for path in files) or any(map(_holds_a_state, files)):
        _apply_desired_state(session, files, dry_run, prune, if_match)
        return
    _for_each(session, list(files), lambda path: _apply_file(session, path, dry_run, if_match))


def _holds_a_state(path: Path) -> bool:
    """Whether the file is a spec with a target state (a file that cannot be read is said
    to be by the apply that reads it)."""
    try:
        return load_spec(path).state is not None
    except ConnectError:
        return False


def _apply_desired_state(
    session: Session, files: tuple[Path, ...], dry_run: bool, prune: bool, if_match: str,
) -> None:
    if if_match:
        raise click.UsageError(
            "--if-match: applying a desired state uses the etag of each connector it reads"
        )
    report = Report()
    specs = read_specs(files, session.output, report)
    apply_specs(session.client, session.output, specs, prune=prune, dry_run=dry_run,
                report=report)
    if report.exit_code is not ExitCode.OK:
        raise click.exceptions.Exit(report.exit_code)


def _apply_file(session: Session, path: Path, dry_run: bool, if_match: str = "") -> None:
    request = read_connector_file(path)
    current = _current_config(session, request.name)
    exists = current is not None
    if dry_run:
        _dry_run(session, path, request, exists)
    elif exists or if_match:
        config = dict(request.config)
        if current is not None and is_marked(current):  # still one an apply created
            config[MARKER_KEY] = current[MARKER_KEY]
        result = session.client.put_connector_config(request.name, config, etag=if_match)
        verb = "created" if result.created else "configured"
        session.output.line(
            _with_new_etag(f"connector {request.name} {verb}", if_match, result.info.etag)
        )
    else:
        created = session.client.create_connector(
            request.name, request.config, request.initial_state, request.initial_offsets
        )
        state = "RUNNING" if request.initial_state is TargetState.STARTED else (
            request.initial_state.value)
        session.output.line(f"connector {request.name} created ({state})")
        if created.offsets_message:
            session.output.line(created.offsets_message)
    if exists and _has_creation_settings(request):
        session.output.note(
            f"{path}: initial_state and initial_offsets apply only when a connector is "
            f"created; {request.name} exists, so only its config "
            f"{'would be' if dry_run else 'was'} replaced"
        )


def read_connector_file(path: Path) -> ConnectorRequest:
    """The file parsed as ``connect-grpc standalone`` parses it, with a name."""
    try:
        request = load_connector_file(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError.for_field(str(path), f"cannot read: {exc}") from None
    if not request.name.strip():
        raise InvalidArgumentError.for_field(
            f"{path}: name", "required: set \"name\" (or a name= line) in the file"
        )
    return request


def connector_exists(session: Session, name: str) -> bool:
    return _current_config(session, name) is not None


def _current_config(session: Session, name: str) -> Mapping[str, str] | None:
    try:
        return session.client.get_connector(name).config
    except NotFoundError:
        return None


def _has_creation_settings(request: ConnectorRequest) -> bool:
    return request.initial_state is not TargetState.STARTED or request.initial_offsets is not None


def _dry_run(session: Session, path: Path, request: ConnectorRequest, exists: bool) -> None:
    config = {**request.config, "name": request.name}
    errors = session.client.validate_config(config=config).all_errors()
    if errors:
        raise InvalidArgumentError(
            f"{path}: connector {request.name} has {len(errors)} invalid config "
            f"value{'s' if len(errors) > 1 else ''}",
            [FieldViolation(f"config.{key}", message) for key, message in errors],
        )
    action = "update" if exists else "create"
    session.output.line(f"connector {request.name} is valid: apply would {action} it (dry run)")


# ---------------------------------------------------------------------------- patch


@click.command()
@click.argument("name", shell_complete=complete_connector_names)
@click.option("--set", "assignments", metavar="KEY=VALUE", multiple=True,
              help="Set a key (the first = splits key from value); repeat for several.")
@click.option("--unset", "removals", metavar="KEY", multiple=True,
              help="Remove a key; repeat for several.")
@if_match_option("patch")
@pass_session
def patch(
    session: Session, name: str, assignments: tuple[str, ...], removals: tuple[str, ...],
    if_match: str,
) -> None:
    """Change some keys of a connector's config and keep the others (KIP-477,
    PatchConnectorConfig); the merged config is validated as a whole, as `apply` validates."""
    changes = config_patch(assignments, removals)
    info = session.client.patch_connector_config(name, changes, etag=if_match)
    session.output.line(_with_new_etag(f"connector {info.name} patched", if_match, info.etag))


def config_patch(assignments: tuple[str, ...], removals: tuple[str, ...]) -> dict[str, str | None]:
    """The patch ``--set KEY=VALUE`` and ``--unset KEY`` ask for (None removes a key)."""
    if not assignments and not removals:
        raise click.UsageError("give at least one --set KEY=VALUE or --unset KEY")
    changes: dict[str, str | None] = {}
    for assignment in assignments:
        key, equals, value = assignment.partition("=")
        if not equals or not key:
            raise click.BadParameter(f"{assignment!r} is not KEY=VALUE", param_hint="--set")
        changes[key] = value
    both = sorted(set(changes) & set(removals))
    if both:
        raise click.UsageError(f"both set and unset: {', '.join(both)}")
    changes.update(dict.fromkeys(removals))
    return changes


# ---------------------------------------------------------------------------- bulk


def _for_each(session: Session, items: list[Path] | list[str],
              action: Callable[..., None]) -> None:
    """Runs ``action`` on every item even if some fail; each failure is shown, and the
    first one's exit code is the command's."""
    first_failure: ExitCode | None = None
    for item in items:
        try:
            action(item)
        except ConnectError as error:
            code = session.fail(failure_of(error))
            first_failure = first_failure or code
    if first_failure is not None:
        raise click.exceptions.Exit(first_failure)


def _lifecycle(
    verb: str, doc: str, call: Callable[[Session, str, str], str | None]
) -> click.Command:
    """``call(session, name, etag)`` makes the change; returns the new etag, if known."""

    @click.command(verb, help=doc)
    @click.argument("names", nargs=-1, shell_complete=complete_connector_names)
    @regex_option("Also every connector whose whole name matches this regular expression.")
    @if_match_option(verb)
    @pass_session
    def command(
        session: Session, names: tuple[str, ...], pattern: re.Pattern[str] | None,
        if_match: str,
    ) -> None:
        if not names and pattern is None:
            raise click.UsageError("name one or more connectors, or give -e REGEX")
        if if_match and (len(names) != 1 or pattern is not None):
            raise click.UsageError(
                "--if-match: an etag is one connector's: name exactly one, without -e"
            )
        chosen = list(names)
        if pattern is not None:
            chosen += [name for name in matching(session, pattern) if name not in chosen]

        def one(name: str) -> None:
            etag = call(session, name, if_match)
            line = f"connector {name} {_past(verb)}"
            session.output.line(_with_new_etag(line, if_match, etag or ""))

        _for_each(session, chosen, one)

    return command


def _past(verb: str) -> str:
    return {"stop": "stopped", "pause": "paused", "resume": "resumed"}.get(verb, f"{verb}d")


pause = _lifecycle("pause", "Pause connectors and their tasks.",
                   lambda s, name, etag: s.client.pause_connector(name, etag=etag))
resume = _lifecycle("resume", "Resume paused or stopped connectors.",
                    lambda s, name, etag: s.client.resume_connector(name, etag=etag))
stop = _lifecycle("stop", "Stop connectors and remove their tasks (KIP-875; needed before "
                          "offsets alter/reset).",
                  lambda s, name, etag: s.client.stop_connector(name, etag=etag))
delete = _lifecycle("delete", "Delete connectors.",
                    lambda s, name, etag: s.client.delete_connector(name, etag=etag))


# ---------------------------------------------------------------------------- offsets


@click.group()
def offsets() -> None:
    """Read, alter or reset a connector's offsets (KIP-875; alter and reset need the
    connector STOPPED)."""


@offsets.command("get")
@click.argument("name", shell_complete=complete_connector_names)
@output_option()
@pass_session
def offsets_get(session: Session, name: str, output: str) -> None:
    """The connector's offsets; `-o json` writes what `offsets alter -f` reads."""
    found = documents.offsets(session.client.get_offsets(name))
    if output in ("json", "yaml"):
        session.output.document(found, output)
        return
    session.output.table(
        ["PARTITION", "OFFSET"],
        [[compact_json(entry["partition"]), compact_json(entry["offset"])]
         for entry in found["offsets"]],
    )


@offsets.command("alter")
@click.argument("name", shell_complete=complete_connector_names)
@click.option("-f", "--file", "path", type=FILE,
              help='JSON: {"offsets": [{"partition": {...}, "offset": {...}}]} (a null '
                   "offset resets that partition).")
@click.option("--to-time", "to_time",
              help="Rewind a sink by time instead: every partition of its topics goes to its "
                   "first record at or after this time (RFC 3339 with a zone, e.g. "
                   "2026-11-25T10:00:00Z, or milliseconds since the epoch), or to its end.")
@if_match_option("alter")
@pass_session
def offsets_alter(
    session: Session, name: str, path: Path | None, to_time: str | None, if_match: str
) -> None:
    """Merge the file's offsets into the connector's, or rewind a sink to a time."""
    if (path is None) == (to_time is None):
        raise click.UsageError("Give exactly one of option '-f' / '--file' and '--to-time'.")
    if path is None:
        change = session.client.alter_offsets(
            name, all_partitions_time_ms=parse_time(str(to_time)), etag=if_match
        )
    else:
        try:
            wanted = load_offsets_file(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidArgumentError.for_field(str(path), f"cannot read: {exc}") from None
        change = session.client.alter_offsets(name, wanted, etag=if_match)
    session.output.line(_with_new_etag(change.message, if_match, change.etag))
    if change.resolved:
        session.output.table(
            ["PARTITION", "OFFSET"],
            [[compact_json(o.partition), compact_json(o.offset)] for o in change.resolved],
        )


def parse_time(text: str) -> int:
    """Milliseconds since the epoch from an RFC 3339 time with a zone, or from a number of
    milliseconds. A time with no zone is refused rather than read in the local one."""
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    try:
        moment = datetime.fromisoformat(stripped)
    except ValueError:
        raise InvalidArgumentError.for_field(
            "--to-time",
            f"{text!r} is neither an RFC 3339 time (2026-11-25T10:00:00Z) nor milliseconds "
            "since the epoch",
        ) from None
    if moment.tzinfo is None:
        raise InvalidArgumentError.for_field(
            "--to-time", f"{text!r} has no time zone: add one (Z for UTC, or +01:00)"
        )
    millis, rest = divmod(moment - datetime(1970, 1, 1, tzinfo=UTC), timedelta(milliseconds=1))
    return int(millis) + (rest > timedelta(0))  # rounded up, as the server rounds a Timestamp


@offsets.command("reset")
@click.argument("name", shell_complete=complete_connector_names)
@if_match_option("reset")
@pass_session
def offsets_reset(session: Session, name: str, if_match: str) -> None:
    """Reset all of the connector's offsets."""
    session.output.line(session.client.reset_offsets(name, etag=if_match))

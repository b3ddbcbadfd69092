"""``ctl preview``: a connector file's pipeline run on sample records, or on the last
records of a topic, shown stage by stage (PreviewPipeline)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from connect_grpc.ctl import documents
from connect_grpc.ctl.cmd_change import FILE, read_connector_file
from connect_grpc.ctl.session import Session, output_option, pass_session
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.pipeline.dead_letter_headers import ERROR_HEADER_EXCEPTION_STACK_TRACE
from connect_grpc.pipeline.preview_model import (
    ConnectData,
    Data,
    FailureAction,
    Outcome,
    PipelinePreview,
    RecordPreview,
    RecordView,
    SampleData,
    SampleRecord,
    StageFailure,
    TopicTail,
)

#: Characters of a key, value or headers cell in a table (wide: all of them).
CELL_WIDTH = 40


@click.command()
@click.option("-f", "--file", "path", type=FILE, required=True,
              help="The connector file (.json, .yaml or .properties, as `apply` reads them).")
@click.option("--sample", "sample_path", type=FILE,
              help="Sample records, one JSON object a line (see below).")
@click.option("--from-topic", "topic", help="Preview the last records of this topic (sinks).")
@click.option("--last", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="With --from-topic: how many records.")
@output_option(("table", "wide", "json", "yaml"))
@pass_session
def preview(session: Session, path: Path, sample_path: Path | None, topic: str | None,
            last: int, output: str) -> None:
    """Run records through the file's converters and transformations and show every
    stage's output, or the stage that fails with what errors.* would do with the record
    (skip it, fail the task, its dead-letter queue and headers). Nothing is written and no
    connector is created.

    \b
    A sample line: {"topic": "orders", "partition": 0, "offset": 5, "timestamp_ms": 1700000000000,
      "key": <JSON>, "value": <JSON>, "headers": {"h": "text or JSON"}}
    key/value are sent as JSON text; key_text/value_text as plain UTF-8 bytes,
    key_base64/value_base64 as raw bytes. A header given as a string is its UTF-8 bytes,
    any other JSON its JSON text. Every field is optional; blank and # lines are skipped.
    """
    if (sample_path is None) == (topic is None):
        raise click.UsageError("give either --sample FILE or --from-topic TOPIC")
    request = read_connector_file(path)
    config = {**request.config, "name": request.name}
    if sample_path is not None:
        result = session.client.preview_pipeline(config=config, samples=read_samples(sample_path))
    else:
        assert topic is not None
        result = session.client.preview_pipeline(
            config=config, from_topic=TopicTail(topic, last)
        )
    if output in ("json", "yaml"):
        session.output.document(documents.preview(result), output)
        return
    _show(session, result, wide=output == "wide")


# ---------------------------------------------------------------------------- samples


def read_samples(path: Path) -> list[SampleRecord]:
    """Every sample record of a JSON-lines file; InvalidArgumentError names the line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError.for_field(str(path), f"cannot read: {exc}") from None
    samples = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{number}"
        try:
            document = json.loads(line)
        except ValueError as exc:
            raise InvalidArgumentError.for_field(where, f"not valid JSON: {exc}") from None
        if not isinstance(document, dict):
            raise InvalidArgumentError.for_field(where, "expected a JSON object")
        samples.append(_sample(where, document))
    if not samples:
        raise InvalidArgumentError.for_field(str(path), "no sample record in the file")
    return samples


def _sample(where: str, document: dict[str, Any]) -> SampleRecord:
    headers = document.get("headers") or {}
    if not isinstance(headers, dict):
        raise InvalidArgumentError.for_field(f"{where}: headers", "expected a JSON object")
    return SampleRecord(
        topic=_typed(where, document, "topic", str) or "",
        partition=_typed(where, document, "partition", int),
        offset=_typed(where, document, "offset", int),
        timestamp_ms=_typed(where, document, "timestamp_ms", int),
        key=_data(where, document, "key"),
        value=_data(where, document, "value"),
        headers=tuple((key, _header(value)) for key, value in headers.items()),
    )


def _header(value: Any) -> bytes | None:
    """A header given as a string is its UTF-8 bytes, other JSON its JSON text's."""
    if value is None:
        return None
    return (value if isinstance(value, str) else json.dumps(value)).encode("utf-8")


def _typed(where: str, document: dict[str, Any], field: str, kind: type) -> Any:
    value = document.get(field)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise InvalidArgumentError.for_field(f"{where}: {field}", f"expected a {kind.__name__}")
    return value


def _data(where: str, document: dict[str, Any], side: str) -> SampleData:
    """The side's data: ``side`` as JSON text, ``side_text`` as UTF-8, ``side_base64``."""
    given = [name for name in (side, f"{side}_text", f"{side}_base64") if name in document]
    if len(given) > 1:
        raise InvalidArgumentError.for_field(
            f"{where}: {given[1]}", f"give only one of {', '.join(given)}"
        )
    if not given or document[given[0]] is None:
        return None
    name, value = given[0], document[given[0]]
    if name == side:
        return json.dumps(value)
    if not isinstance(value, str):
        raise InvalidArgumentError.for_field(f"{where}: {name}", "expected a string")
    if name.endswith("_text"):
        return value.encode("utf-8")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise InvalidArgumentError.for_field(f"{where}: {name}", f"not base64: {exc}") from None


# ---------------------------------------------------------------------------- table


def _show(session: Session, result: PipelinePreview, *, wide: bool) -> None:
    headers = ["#", "STAGE", "PLUGIN", "RESULT", "TOPIC", "KEY", "VALUE", "HEADERS"]
    session.output.table(headers, _rows(result, wide))
    for index, record in enumerate(result.records):
        if record.failure is not None:
            for line in failure_lines(index, record.failure, wide=wide):
                session.output.line(Text(line))


def _rows(result: PipelinePreview, wide: bool) -> Iterator[list[object]]:
    for index, record in enumerate(result.records):
        yield [index, "input", "", "", *_cells(record.input, wide)]
        for stage in record.stages:
            plugin = stage.class_name if wide else stage.class_name.rsplit(".", 1)[-1]
            if stage.alias:
                plugin = f"{stage.alias} ({plugin})"
            verdict = stage.verdict.value
            if stage.predicate:
                matched = "match" if stage.predicate_matched else "no match"
                verdict += f" ({stage.predicate}: {matched})"
            cells = _cells(stage.record, wide) if stage.record is not None else ["", "", "", ""]
            yield [index, stage.stage, plugin, verdict, *cells]
        yield [index, _final(result, record), "", record.outcome.value,
               *(_cells(record.output, wide) if record.output is not None else ["", "", "", ""])]


def _final(result: PipelinePreview, record: RecordPreview) -> str:
    if record.outcome is not Outcome.DELIVERED:
        return "result"
    return "put" if result.type.value == "sink" else "produced"


def _cells(view: RecordView, wide: bool) -> list[str]:
    topic = view.topic if view.partition is None else f"{view.topic}/{view.partition}"
    headers = ", ".join(f"{key}={_text(value, wide)}" for key, value in view.headers)
    return [topic, _cut(_text(view.key, wide), wide), _cut(_text(view.value, wide), wide),
            _cut(headers, wide)]


def _text(data: Data, wide: bool) -> str:
    if data is None:
        return "null"
    if isinstance(data, ConnectData):
        return f"{data.json} : {data.schema}" if wide and data.schema else data.json
    try:
        return "b" + json.dumps(data.decode("utf-8"), ensure_ascii=False)
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode("ascii")


def _cut(text: str, wide: bool) -> str:
    return text if wide or len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"


def failure_lines(index: int, failure: StageFailure, *, wide: bool) -> list[str]:
    """What a failed record's stage raised and what the worker would do with it."""
    action = ("the record is skipped, the task goes on"
              if failure.action is FailureAction.RECORD_SKIPPED
              else "the task fails (errors.tolerance=none)")
    lines = [
        f"record {index} failed at {failure.stage} ({failure.class_name}): "
        f"{failure.exception_class}: {failure.message}",
        f"  {action}",
    ]
    if failure.dead_letter_topic:
        lines.append(f"  dead-letter queue: {failure.dead_letter_topic}")
    for key, value in failure.dead_letter_headers:
        text = "null" if value is None else value.decode("utf-8", "replace")
        if key == ERROR_HEADER_EXCEPTION_STACK_TRACE and not wide:  # shown by its size
            text = f"({len(text.splitlines())} lines; -o wide shows it)"
        lines.append(f"    {key}={text}")
    return lines

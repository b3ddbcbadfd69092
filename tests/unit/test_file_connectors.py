"""FileStream source and sink: offsets, partial lines, batch limits, alter_offsets checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from connect_grpc.connectors.api import SinkRecord
from connect_grpc.connectors.file import (
    WRITE_BLOCK_BYTES,
    FileStreamSinkConnector,
    FileStreamSinkTask,
    FileStreamSourceConnector,
    FileStreamSourceTask,
)
from connect_grpc.data.schema import STRING_SCHEMA, SchemaBuilder
from connect_grpc.data.struct import Struct
from connect_grpc.testing.plugins import FakeSourceTaskContext


def _source_task(
    path: Path, context: FakeSourceTaskContext | None = None, batch_size: int | None = None
) -> FileStreamSourceTask:
    task = FileStreamSourceTask()
    task.initialize(context or FakeSourceTaskContext())
    config = {"file": str(path), "topic": "lines"}
    if batch_size is not None:
        config["batch.size"] = str(batch_size)
    task.start(config)
    return task


def _values(task: FileStreamSourceTask, max_records: int = 10_000) -> list[str]:
    return [str(record.value) for record in task.poll(max_records)]


def test_source_reads_complete_lines_with_partition_and_byte_offsets(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes("a\nbé\r\nc\n".encode())
    records = _source_task(path).poll(100)
    assert [r.value for r in records] == ["a", "bé", "c"]
    assert [r.source_offset for r in records] == [
        {"position": 2}, {"position": 7}, {"position": 9}
    ]
    assert {r.topic for r in records} == {"lines"}
    assert all(r.source_partition == {"filename": str(path)} for r in records)


def test_source_replaces_invalid_utf8_per_line_and_keeps_positions_across_limits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\xff\nb\xc3\nc\r\nd")  # two broken sequences, a CRLF, a partial line
    task = _source_task(path)
    first = task.poll(2)
    assert [r.value for r in first] == ["a\ufffd", "b\ufffd"]
    assert [r.source_offset for r in first] == [{"position": 3}, {"position": 6}]
    second = task.poll(10)
    assert [(r.value, r.source_offset) for r in second] == [("c", {"position": 9})]
    assert task.poll(10) == []  # "d" has no newline yet


def test_source_resumes_after_the_committed_position(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("one\ntwo\nthree\n")
    context = FakeSourceTaskContext()
    context.set_offset({"filename": str(path)}, {"position": 4})
    task = _source_task(path, context)
    records = task.poll(100)
    assert [r.value for r in records] == ["two", "three"]
    assert records[-1].source_offset == {"position": path.stat().st_size}


def test_source_holds_back_a_partial_line_until_it_is_completed(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("done\npart")
    task = _source_task(path)
    assert _values(task) == ["done"]
    assert task.poll(100) == []
    with path.open("a") as stream:
        stream.write("ial\nnext\n")
    records = task.poll(100)
    assert [r.value for r in records] == ["partial", "next"]
    assert records[-1].source_offset == {"position": len("done\npartial\nnext\n")}


def test_source_respects_batch_size_and_max_records(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("".join(f"{i}\n" for i in range(10)))
    task = _source_task(path, batch_size=4)
    assert _values(task, 100) == ["0", "1", "2", "3"]
    assert _values(task, 3) == ["4", "5", "6"]
    assert _values(task, 100) == ["7", "8", "9"]
    assert task.poll(100) == []
    assert task.position == path.stat().st_size


def test_source_reads_batches_larger_than_one_read_chunk(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    line = "x" * 1000
    path.write_text(f"{line}\n" * 300)
    task = _source_task(path)
    assert len(task.poll(250)) == 250
    assert len(task.poll(250)) == 50
    assert task.position == 300 * 1001


def test_source_waits_for_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "later.txt"
    task = _source_task(path)
    assert task.poll(10) == []
    path.write_text("hello\n")
    assert _values(task) == ["hello"]
    task.stop()


def test_source_starts_over_when_the_file_is_shorter_than_the_committed_position(
    tmp_path: Path,
) -> None:
    """A demo run's stale offset (13926) against a new, shorter input: Kafka's task would
    skip past the end and send nothing; this one logs the truncation and reads from 0."""
    path = tmp_path / "in.txt"
    path.write_text("new one\nnew two\n")
    context = FakeSourceTaskContext()
    context.set_offset({"filename": str(path)}, {"position": 13926})
    task = _source_task(path, context)
    with capture_logs() as logs:
        records = task.poll(100)
    assert [(r.value, r.source_offset) for r in records] == [
        ("new one", {"position": 8}), ("new two", {"position": 16})
    ]
    [event] = [e for e in logs if e["event"] == "file_truncated"]
    assert (event["committed_position"], event["size"], event["restart_position"]) == (
        13926, 16, 0
    )
    assert event["log_level"] == "warning"


def test_source_starts_over_when_the_open_file_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("first line\nsecond line\n")
    task = _source_task(path)
    assert _values(task) == ["first line", "second line"]
    with path.open("r+") as stream:  # truncated in place, as `> in.txt` does
        stream.truncate(0)
        stream.write("x\n")
    with capture_logs() as logs:
        records = task.poll(100)
    assert [(r.value, r.source_offset) for r in records] == [("x", {"position": 2})]
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["file_truncated"]
    assert task.poll(100) == []


def test_source_reads_a_replaced_file_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("old\n")
    task = _source_task(path)
    assert _values(task) == ["old"]
    replacement = tmp_path / "in.txt.new"
    replacement.write_text("rotated a\nrotated b\n")  # longer than the old position
    replacement.rename(path)
    with capture_logs() as logs:
        records = task.poll(100)
    assert [(r.value, r.source_offset) for r in records] == [
        ("rotated a", {"position": 10}), ("rotated b", {"position": 20})
    ]
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["file_replaced"]
    with path.open("a") as stream:
        stream.write("appended\n")
    assert _values(task) == ["appended"]
    task.stop()


def test_source_keeps_reading_its_open_file_when_the_path_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("kept\n")
    task = _source_task(path)
    assert _values(task) == ["kept"]
    path.unlink()
    assert task.poll(100) == []
    assert task.position == 5


def test_source_rejects_a_malformed_committed_offset(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    context = FakeSourceTaskContext()
    context.set_offset({"filename": str(path)}, {"position": "12"})
    with pytest.raises(ValueError, match="'position' key in the offset is expected to be"):
        _source_task(path, context)


def test_source_connector_runs_one_task_whatever_tasks_max() -> None:
    connector = FileStreamSourceConnector()
    connector.start({"file": "/tmp/x", "topic": "t"})
    assert connector.task_configs(5) == [
        {"file": "/tmp/x", "topic": "t", "batch.size": "2000"}
    ]


def test_source_config_validation() -> None:
    errors = FileStreamSourceConnector().validate({"topic": "a,b", "batch.size": "0"})
    assert errors["file"] == ['Missing required configuration "file" which has no default value.']
    assert errors["topic"] == [
        "Invalid value a,b for configuration topic: "
        "FileStreamSourceConnector takes a single topic, not a list"
    ]
    assert errors["batch.size"] == ["Invalid value 0 for configuration batch.size: "
                                    "Value must be at least 1"]


CONFIG = {"file": "/tmp/in.txt", "topic": "t"}


@pytest.mark.parametrize(
    ("partition", "offset", "message"),
    [
        ({"filename": "/x"}, {"pos": 1}, "Offset objects should either be null or contain the "
                                         "key 'position'"),
        ({"filename": "/x"}, {"position": "1"}, "is expected to be an integer"),
        ({"filename": "/x"}, {"position": True}, "is expected to be an integer"),
        ({"filename": "/x"}, {"position": 1.5}, "is expected to be an integer"),
        ({"filename": "/x"}, {"position": -1}, "should be a non-negative value"),
        ({"file": "/x"}, {"position": 1}, "Partition objects should contain the key 'filename'"),
    ],
)
def test_source_alter_offsets_rejects_malformed_offsets(
    partition: dict[str, object], offset: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FileStreamSourceConnector().alter_offsets(CONFIG, [(partition, offset)])  # type: ignore[list-item]


def test_source_alter_offsets_accepts_valid_offsets_and_any_reset() -> None:
    connector = FileStreamSourceConnector()
    assert connector.alter_offsets(CONFIG, [({"filename": "/x"}, {"position": 2**63 - 1})])
    assert connector.alter_offsets(CONFIG, [({"garbage": 1}, None)])


def test_source_alter_offsets_needs_the_file_config() -> None:
    with pytest.raises(ValueError, match="'file' configuration is unspecified"):
        FileStreamSourceConnector().alter_offsets({"topic": "t"}, [])


def _sink_record(value: bytes | None, offset: int) -> SinkRecord:
    return SinkRecord(topic="t", kafka_partition=0, kafka_offset=offset, key=None, value=value)


def test_sink_appends_values_as_lines_and_flushes(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("existing\n")
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    task.put([_sink_record("héllo".encode(), 0), _sink_record(None, 1)])
    task.flush({("t", 0): 2})
    assert path.read_text(encoding="utf-8") == "existing\nhéllo\nnull\n"
    task.put([_sink_record(b"more", 2)])
    task.stop()
    task.stop()
    assert path.read_text(encoding="utf-8").endswith("null\nmore\n")


def test_sink_creates_its_file_but_not_its_directory_and_says_which_is_missing(
    tmp_path: Path,
) -> None:
    """As Kafka Connect's (``Files.newOutputStream(CREATE, APPEND)``): the file is created,
    a missing directory is not; the error's first line names the directory and the key."""
    missing = tmp_path / "no-such-dir"
    path = missing / "out.txt"
    task = FileStreamSinkTask()
    with pytest.raises(FileNotFoundError) as raised:
        task.start({"file": str(path), "topics": "t"})
    first_line = str(raised.value).splitlines()[0]
    assert f"directory {missing} does not exist" in first_line
    assert f"its file {path} (the 'file' key)" in first_line
    assert f"mkdir -p {missing}" in first_line
    assert not missing.exists()

    missing.mkdir()
    task.start({"file": str(path), "topics": "t"})  # the file itself is created
    task.stop()
    assert path.exists()


@pytest.mark.parametrize(
    "values",
    [
        [b"caf\xc3\xa9", b"\xc3", b"\xa9tail", b"\xff\xfe", b"", b"ok\xe2\x82"],
        [b"\xe2\x82", None, b"\xac\xff"],
    ],
)
def test_sink_decodes_each_value_on_its_own_whether_or_not_one_is_null(
    tmp_path: Path, values: list[bytes | None]
) -> None:
    path = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    task.put([_sink_record(value, i) for i, value in enumerate(values)])
    task.stop()
    expected = [
        "null" if value is None else value.decode("utf-8", errors="replace") for value in values
    ]
    assert path.read_text(encoding="utf-8") == "".join(f"{line}\n" for line in expected)


def test_sink_writes_utf8_values_byte_for_byte_and_ascii_ones_as_they_are(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    task.put([_sink_record(b"plain", 0), _sink_record(b"ascii \\x41", 1)])
    task.put([_sink_record("héllo wörld €".encode(), 2), _sink_record(b"", 3)])
    task.stop()
    assert path.read_bytes() == b"plain\nascii \\x41\n" + "héllo wörld €".encode() + b"\n\n"


@pytest.mark.parametrize("as_text", [False, True], ids=["bytes", "connect-data"])
def test_sink_writes_a_batch_larger_than_a_write_block_line_for_line(
    tmp_path: Path, as_text: bool
) -> None:
    # written a block at a time, each block sized by the first line: a short first line, then
    # long ones, ASCII and not, so that the batch spans many blocks of uneven sizes
    lines = ["a"] + [f"{i:06d} {'é' if i % 7 == 0 else 'x'}{'y' * (i % 300)}" for i in range(6000)]
    assert len("".join(lines).encode()) > 3 * WRITE_BLOCK_BYTES
    path = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    values: list[Any] = lines if as_text else [line.encode() for line in lines]
    task.put([_sink_record(value, i) for i, value in enumerate(values)])
    task.put([_sink_record(values[1], len(values))])
    task.stop()
    assert path.read_bytes() == "".join(f"{line}\n" for line in [*lines, lines[1]]).encode()


def _lines_written(tmp_path: Path, values: list[Any]) -> list[str]:
    """The lines FileStreamSinkTask writes for one put of ``values`` (one record each)."""
    path = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    task.put([_sink_record(value, i) for i, value in enumerate(values)])  # type: ignore[arg-type]
    task.stop()
    return path.read_text(encoding="utf-8").splitlines()


def test_sink_writes_connect_data_as_kafka_prints_it(tmp_path: Path) -> None:
    # with a converter the sink gets Connect data; Kafka's FileStreamSink prints
    # String.valueOf(value): a Struct's fields with a value, lists and maps in Java's form
    schema = SchemaBuilder.struct().field("name", STRING_SCHEMA).field(
        "age", SchemaBuilder.int32().optional().build()).build()
    values = [Struct(schema).put("name", "alice"), "text", None, [1, True], {"k": 1.5}, 42]
    assert _lines_written(tmp_path, values) == [
        "Struct{name=alice}", "text", "null", "[1, true]", "{k=1.5}", "42",
    ]


def test_sink_writes_each_struct_by_its_own_schema_in_a_batch_of_several(
    tmp_path: Path,
) -> None:
    # runs of Structs of one schema object, an equal schema that is another object, another
    # schema, and values that are not Structs between them
    def schema_of(*names: str) -> Any:
        builder = SchemaBuilder.struct()
        for name in names:
            builder.field(name, SchemaBuilder.string().optional().build())
        return builder.build()

    first, equal, other = schema_of("a", "b"), schema_of("a", "b"), schema_of("b", "a", "c")
    values = [
        Struct(first).put("a", "1").put("b", "2"),
        Struct(first).put("a", "3"),
        Struct(equal).put("a", "4").put("b", "5"),
        "text",
        Struct(other).put("a", "6").put("b", "7").put("c", "8"),
        Struct(first).put("b", 'x"y'),
        None,
    ]
    assert _lines_written(tmp_path, values) == [
        "Struct{a=1,b=2}", "Struct{a=3}", "Struct{a=4,b=5}", "text",
        "Struct{b=7,a=6,c=8}", 'Struct{b=x"y}', "null",
    ]


def test_source_values_carry_the_string_schema(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("one\ntwo\n")
    task = _source_task(path)
    records = task.poll(10)
    assert [(r.value, r.value_schema) for r in records] == [
        ("one", STRING_SCHEMA), ("two", STRING_SCHEMA),
    ]


def test_sink_put_before_start_fails() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        FileStreamSinkTask().put([_sink_record(b"x", 0)])


def test_sink_connector_requires_file_and_accepts_topics() -> None:
    connector = FileStreamSinkConnector()
    assert connector.validate({"file": "/tmp/o", "topics": "a,b"}) == {"file": []}
    assert connector.validate({"topics": "a"})["file"] == [
        'Missing required configuration "file" which has no default value.'
    ]
    connector.start({"file": "/tmp/o", "topics": "a"})
    assert connector.task_configs(3) == [{"file": "/tmp/o"}] * 3
    assert connector.alter_offsets({}, {("a", 0): 5, ("a", 1): None}) is True

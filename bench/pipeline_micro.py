"""The per-record cost of the record pipeline's data path, on one core (no broker, no Spark).

Run from the repository root::

    .venv/bin/python bench/pipeline_micro.py [--records N] [--rounds R] [--cpu C] [--filestream]

Measures, for a 10-field struct value (int64, int32, two strings, an optional string left
null, a double, a float, a boolean, bytes and a Timestamp), records/s of:

* ``from_connect_data``: JsonConverter (``schemas.enable=true``) writing the envelope;
* ``to_connect_data``: the same converter reading those bytes back into a Struct;
* ``round trip``: both, as a sink-then-source pipeline would run them per record;
* the same with ``schemas.enable=false`` on the equivalent dict (schemaless JSON);
* a round trip of a 100-character line with a STRING schema (what FileStreamSource emits);
* the converter + 3-SMT chain on that struct, as a sink runs it (bytes → JsonConverter →
  InsertField$Value → ReplaceField$Value → MaskField$Value) and as a source does (the 3 SMTs
  → JsonConverter → bytes), on SinkRecord/SourceRecord objects like the runtime's;
* issue 24's FileStream benchmark per record (``bench/filestream.py --pipeline json-smts``,
  its connector configs from ``bench/pipelines.py``), on its 100-byte lines: the source's
  chain (HoistField, InsertField, ReplaceField, MaskField → JsonConverter) and the sink's
  (JsonConverter → InsertField, ReplaceField, MaskField), the SMTs called directly; then
  the same as the runtime runs them, through the task's ``TaskPipeline`` (``apply_source``
  on the records FileStreamSourceTask makes; ``sink_batch`` on the records the consumer
  gives, then FileStreamSinkTask's ``put`` writing each Struct as Kafka prints it).

Each measurement converts N distinct records (built beforehand, not timed), R times; each
round is timed by the process's CPU time (``time.process_time``), so time the process spends
pre-empted by other processes on a shared machine is not counted (their load still slows
it through the caches); the best round is reported, with the median beside it.
``--cpu`` pins the process to one CPU (default: the last one) so the figure is one core's;
the garbage collector has the worker's thresholds (``gc_tuning.tune_for_batches``).
The Markdown table goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kafka_connect import LINE_BYTES  # the sibling modules: the script's directory is on sys.path
from kafka_connect import line as bench_line
from pipelines import PIPELINES

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.connectors.file import FileStreamSinkTask
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.data.converters.json import JsonConverter
from connect_grpc.data.logical import Timestamp
from connect_grpc.data.schema import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    SchemaBuilder,
)
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms.insert_field import InsertFieldValue
from connect_grpc.data.transforms.mask_field import MaskFieldValue
from connect_grpc.data.transforms.replace_field import ReplaceFieldValue
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.gc_tuning import tune_for_batches
from connect_grpc.pipeline.build import PipelinePlugins, build_pipeline
from connect_grpc.pipeline.task_pipeline import TaskPipeline

TOPIC = "bench"
EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
#: Records per sink batch at most (a sink task's batches grow to 100 000, batching.py).
SINK_BATCH = 100_000


def ten_field_schema() -> Schema:
    return (
        SchemaBuilder.struct().name("bench.Record").version(1)
        .field("id", INT64_SCHEMA)
        .field("seq", INT32_SCHEMA)
        .field("name", STRING_SCHEMA)
        .field("email", STRING_SCHEMA)
        .field("note", OPTIONAL_STRING_SCHEMA)
        .field("amount", FLOAT64_SCHEMA)
        .field("ratio", FLOAT32_SCHEMA)
        .field("active", BOOLEAN_SCHEMA)
        .field("token", BYTES_SCHEMA)
        .field("created", Timestamp.SCHEMA)
        .build()
    )


def make_structs(schema: Schema, count: int) -> list[Struct]:
    return [
        Struct(schema)
        .put("id", 10_000_000_000 + index)
        .put("seq", index)
        .put("name", f"customer-{index:08d}")
        .put("email", f"customer{index}@example.com")
        .put("amount", index * 1.25)
        .put("ratio", (index % 100) / 8)
        .put("active", index % 2 == 0)
        .put("token", index.to_bytes(8, "big"))
        .put("created", EPOCH + datetime.timedelta(milliseconds=index))
        for index in range(count)
    ]


def as_dict(struct: Struct) -> dict[str, Any]:
    """The struct as schemaless JSON data (bytes and timestamps as text)."""
    result: dict[str, Any] = {}
    for field in struct.schema.fields:
        value = struct.get(field.name)
        if isinstance(value, bytes):
            value = value.hex()
        elif isinstance(value, datetime.datetime):
            value = int(value.timestamp() * 1000)
        result[field.name] = value
    return result


def filestream_pipeline(is_sink: bool) -> PipelinePlugins:
    """The pipeline plugins of the FileStream benchmark's source or sink connector."""
    source, sink = PIPELINES["json-smts"]
    config = {
        "name": "bench-sink" if is_sink else "bench-source",
        "connector.class": "FileStreamSink" if is_sink else "FileStreamSource",
        **(sink if is_sink else source),
    }
    worker = WorkerConfig.from_properties({"bootstrap.servers": "localhost:9092"})
    return build_pipeline(config, worker, Plugins(), is_sink=is_sink)


def task_pipeline(is_sink: bool) -> TaskPipeline:
    return TaskPipeline.create(
        TaskId("bench", 0), filestream_pipeline(is_sink), is_sink=is_sink,
        producer_conf={"bootstrap.servers": "localhost:9092"}, sleep=lambda _: False,
    )


def three_smts() -> list[Any]:
    """InsertField, ReplaceField and MaskField on the value, configured as Kafka Connect
    users write them."""
    insert, rename, mask = InsertFieldValue(), ReplaceFieldValue(), MaskFieldValue()
    insert.configure({"static.field": "origin", "static.value": "bench", "topic.field": "topic"})
    rename.configure({"renames": "name:customer", "exclude": "note"})
    mask.configure({"fields": "email,amount"})
    return [insert, rename, mask]


def converter(schemas_enable: bool) -> JsonConverter:
    result = JsonConverter()
    result.configure({"schemas.enable": str(schemas_enable).lower()}, False)
    return result


@dataclass
class Measurement:
    name: str
    best: float
    median: float


def measure(
    name: str,
    count: int,
    rounds: int,
    run: Callable[[], None],
    prepare: Callable[[], None] = lambda: None,
) -> Measurement:
    """``run`` timed ``rounds`` times, each after ``prepare`` (not timed)."""
    rates = []
    for _ in range(rounds):
        prepare()
        started = time.process_time()
        run()
        rates.append(count / (time.process_time() - started))
    result = Measurement(name, max(rates), statistics.median(rates))
    sys.stderr.write(f"{name}: best {result.best:,.0f} records/s\n")
    return result


def run_all(count: int, rounds: int, only_filestream: bool = False) -> list[Measurement]:
    if only_filestream:
        return filestream_measurements(count, rounds)
    schema = ten_field_schema()
    structs = make_structs(schema, count)
    enveloped = converter(True)
    payloads = [enveloped.from_connect_data(TOPIC, None, schema, s) for s in structs]
    assert enveloped.to_connect_data(TOPIC, None, payloads[0]).value == structs[0]
    dicts = [as_dict(s) for s in structs]
    plain = converter(False)
    plain_payloads = [plain.from_connect_data(TOPIC, None, None, d) for d in dicts]

    write = enveloped.from_connect_data
    read = enveloped.to_connect_data
    write_plain = plain.from_connect_data
    read_plain = plain.to_connect_data

    def envelope_writes() -> None:
        for struct in structs:
            write(TOPIC, None, schema, struct)

    def envelope_reads() -> None:
        for payload in payloads:
            read(TOPIC, None, payload)

    def envelope_round_trips() -> None:
        for struct in structs:
            read(TOPIC, None, write(TOPIC, None, schema, struct))

    def plain_round_trips() -> None:
        for document in dicts:
            read_plain(TOPIC, None, write_plain(TOPIC, None, None, document))

    lines = [f"line {index:09d} " + "x" * 85 for index in range(count)]

    def line_round_trips() -> None:
        for text in lines:
            read(TOPIC, None, write(TOPIC, None, STRING_SCHEMA, text))

    def plain_reads() -> None:
        for payload in plain_payloads:
            read_plain(TOPIC, None, payload)

    smts = [smt.apply for smt in three_smts()]

    def sink_chains() -> None:
        for offset, payload in enumerate(payloads):
            value_schema, value = read(TOPIC, None, payload)
            record: Any = SinkRecord(TOPIC, 0, offset, None, value, None, (), None, value_schema)
            for apply in smts:
                record = apply(record)

    partition = {"file": "bench"}

    def source_chains() -> None:
        for offset, struct in enumerate(structs):
            record: Any = SourceRecord(partition, {"position": offset}, TOPIC, struct,
                                       None, None, (), None, schema)
            for apply in smts:
                record = apply(record)
            write(TOPIC, None, record.value_schema, record.value)

    measurements = [
        measure("JsonConverter from_connect_data (schemas.enable=true, Struct)", count, rounds,
                envelope_writes),
        measure("JsonConverter to_connect_data (schemas.enable=true, Struct)", count, rounds,
                envelope_reads),
        measure("JsonConverter round trip (schemas.enable=true, Struct)", count, rounds,
                envelope_round_trips),
        measure("JsonConverter to_connect_data (schemas.enable=false, dict)", count, rounds,
                plain_reads),
        measure("JsonConverter round trip (schemas.enable=false, dict)", count, rounds,
                plain_round_trips),
        measure("JsonConverter round trip (schemas.enable=true, STRING line)", count, rounds,
                line_round_trips),
        measure("sink chain: JsonConverter + InsertField, ReplaceField, MaskField", count,
                rounds, sink_chains),
        measure("source chain: InsertField, ReplaceField, MaskField + JsonConverter", count,
                rounds, source_chains),
    ]
    return [*measurements, *filestream_measurements(count, rounds)]


def filestream_measurements(count: int, rounds: int) -> list[Measurement]:
    """Issue 24's FileStream benchmark's chains on its lines (see the module docstring)."""
    partition = {"filename": "bench.txt"}
    lines = [line[:-1] for line in map(bench_line, range(count))]
    polled = [
        SourceRecord(partition, {"position": (index + 1) * LINE_BYTES}, TOPIC, text,
                     None, None, (), None, STRING_SCHEMA)
        for index, text in enumerate(lines)
    ]
    source = task_pipeline(is_sink=False)
    produced = [r for r in source.apply_source(polled) if r is not None]
    assert len(produced) == count
    raws = [SinkRecord(TOPIC, 0, index, None, r.value, 1_700_000_000_000, ())
            for index, r in enumerate(produced)]
    sink = task_pipeline(is_sink=True)
    source_smts = [stage.transformation.apply for stage in source.plugins.stages]
    sink_smts = [stage.transformation.apply for stage in sink.plugins.stages]
    value_converter = source.plugins.value_converter
    assert value_converter is not None
    write, read = value_converter.from_connect_data, value_converter.to_connect_data

    def source_chains() -> None:
        for record in polled:
            for apply in source_smts:
                record = apply(record)
            write(TOPIC, None, record.value_schema, record.value)

    def sink_chains() -> None:
        for raw in raws:
            value_schema, value = read(TOPIC, None, raw.value)
            record: Any = SinkRecord(TOPIC, 0, raw.kafka_offset, None, value,
                                     raw.timestamp_ms, (), None, value_schema)
            for apply in sink_smts:
                record = apply(record)

    def source_pipeline() -> None:
        outgoing = [r for r in source.apply_source(polled) if r is not None]
        assert len(outgoing) == count

    with tempfile.TemporaryDirectory() as directory:
        sink_task = FileStreamSinkTask()
        sink_task.start({"file": os.path.join(directory, "sink.txt")})
        batches: list[list[SinkRecord]] = []

        def read_batches() -> None:
            # the records as a reader gives them, anew for each round: the pipeline may
            # make a batch's raw records the records it delivers
            batches[:] = [
                [replace(raw) for raw in raws[start:start + SINK_BATCH]]
                for start in range(0, count, SINK_BATCH)
            ]

        def sink_pipeline() -> None:
            for number, batch in enumerate(batches):
                sink_task.put(sink.sink_batch(batch, number))
                sink.sink_batch_done()

        result = [
            measure("FileStream source chain: HoistField, InsertField, ReplaceField, MaskField "
                    "+ JsonConverter", count, rounds, source_chains),
            measure("FileStream sink chain: JsonConverter + InsertField, ReplaceField, "
                    "MaskField", count, rounds, sink_chains),
            measure("FileStream source pipeline: TaskPipeline.apply_source", count, rounds,
                    source_pipeline),
            measure("FileStream sink pipeline: TaskPipeline.sink_batch + FileStreamSink put",
                    count, rounds, sink_pipeline, read_batches),
        ]
        sink_task.stop()
    source.close()
    sink.close()
    return result


def pin_to_cpu(cpu: int | None) -> int | None:
    if not hasattr(os, "sched_setaffinity"):
        return None
    available = sorted(os.sched_getaffinity(0))
    chosen = available[-1] if cpu is None else cpu
    os.sched_setaffinity(0, {chosen})
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--records", type=int, default=50_000, help="records per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per measurement")
    parser.add_argument("--cpu", type=int, default=None, help="the CPU to pin to")
    parser.add_argument("--filestream", action="store_true",
                        help="only the FileStream benchmark's chains and pipelines")
    args = parser.parse_args(argv)
    cpu = pin_to_cpu(args.cpu)
    tune_for_batches()  # the worker's collector thresholds
    measurements = run_all(args.records, args.rounds, args.filestream)
    out = sys.stdout
    out.write(f"Python {sys.version.split()[0]}, one core (CPU {cpu}), {args.records:,} records "
              f"x {args.rounds} rounds, 10-field struct (envelope {_envelope_size()} bytes)\n\n")
    out.write("| Path | records/s (best) | records/s (median) | µs/record (best) |\n")
    out.write("|---|---:|---:|---:|\n")
    for item in measurements:
        out.write(f"| {item.name} | {item.best:,.0f} | {item.median:,.0f} | "
                  f"{1e6 / item.best:.2f} |\n")
    return 0


def _envelope_size() -> int:
    schema = ten_field_schema()
    data = converter(True).from_connect_data(TOPIC, None, schema, make_structs(schema, 1)[0])
    return len(data or b"")


if __name__ == "__main__":
    sys.exit(main())

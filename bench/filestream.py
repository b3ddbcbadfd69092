"""FileStream pipelines, connect-grpc against Apache Kafka Connect itself, in one run.

Run from the repository root::

    .venv/bin/python bench/filestream.py [--lines N] [--rounds R]

Starts the project's own broker (``LocalKafka``) in a temporary directory and writes N
deterministic lines of 100 bytes (99 characters and a newline). Then, for each of R rounds,
the anchor and connect-grpc take turns (the order alternating from round to round), each
as a worker process of its own started before timing (its start is not timed):

* **Kafka Connect 4.4.0** standalone (``bench/kafka_connect.py``: jars from Maven Central
  through ``mvn``, the FileStream connectors from ``connect-file`` 4.3.1, the newest release
  of it Maven Central serves, installed as a plugin; connectors created through its REST API);
* **connect-grpc** standalone (``connect-grpc standalone``, ``spark.master=local[2]``,
  connectors created through gRPC).

Both get the same connector configurations, Kafka Connect's own (``connector.class =
org.apache.kafka.connect.file.FileStreamSourceConnector`` / ``…SinkConnector``, defaults
otherwise: ``batch.size`` 2000, ``tasks.max`` 1, string converters): FileStreamSource from
the file to a fresh 1-partition topic (``--partitions P``: P partitions), timed from the
create call until the topic's end offsets add up to N; then FileStreamSink from that topic
to a fresh file, timed from the create call until the file has N lines, which must then
equal the input byte for byte (with several partitions, once its lines are sorted: each
partition's lines come in order, the partitions interleaved). The RSS of
each worker's whole process tree (for connect-grpc: the Python process, its Spark JVM and
the executors' Python workers) is sampled every 0.5 s. Reported: records/s of each, the
ratio connect-grpc / Kafka Connect (issue 9's goal: >= 1.0), and the peak RSS of each; then
each rate told apart into the start (the create call to the first record seen) and the
steady state (records/s between the samples that first saw 10 % and 90 % of N), the two
figures issue 25 asks for.

``--pipeline json-smts`` gives both connectors, on both workers, Kafka Connect's record
pipeline as its users write it (issue 24): ``value.converter`` JsonConverter with
``schemas.enable=true``; the source hoists each line into a struct (HoistField) and applies
InsertField, ReplaceField and MaskField; the sink applies InsertField, ReplaceField and
MaskField again. The sink files of the two workers must then be equal byte for byte (each
line is the record value's text, ``Struct{...}``). ``--pipeline none`` (the default) is the
bytes path with no converter and no transformation; ``--pipeline both`` runs the two in one
run, so the cost of the pipeline is a ratio measured in the same run.

Before any timing, one record is written with an idempotent producer: a fresh broker's
first producer id waits for a block of ids from its controller (≈ 0.5 s), which only the
first idempotent producer on the broker pays. The Markdown tables go to stdout, progress to
stderr. The run fails (non-zero exit, no
skipping) if the broker, Kafka Connect or connect-grpc cannot be started.

``--connect-grpc-plugins java`` gives connect-grpc Kafka's own FileStream classes instead
of its Python built-ins: the very ``plugin.path`` directory Kafka Connect is given (the same
``connect-file`` jar), ``plugin.discovery=service_load``, and the worker converters are
Kafka's StringConverter, as the anchor's. connect-grpc then runs in the anchor's mode:
``connect-grpc standalone`` beside ``ConnectStandalone`` (source offsets in a file on both),
``connect-grpc distributed`` alone in a group of its own beside ``ConnectDistributed`` alone
in its own (``--anchor-mode distributed``; internal topics of their own). Which class runs is
chosen by name: with ``connect-file`` on ``plugin.path``, Kafka's class names
(``org.apache.kafka.connect.file.FileStream…Connector``) designate Kafka's Java classes
(the Python built-ins keep their own names and aliases, ``FileStreamSource``); both systems
also get ``connector.plugin.version`` = the jar's version (KIP-891). Before timing, the bench
checks that ListPlugins lists both classes at that version (this call also makes the worker
scan ``plugin.path``, which Kafka Connect does at its start, untimed), and before deleting
each connector that its status and its task's show that version (the Python built-ins report
connect-grpc's own). It then also measures, on both systems, ``--start-samples`` starts of a
FileStreamSource (create call → connector RUNNING → task RUNNING, status polled every
10 ms) and the RSS of the worker's process tree with ``--rss-tasks`` FileStreamSource
connectors' tasks running (``bench/connector_start.py``). With the Python built-ins
connect-grpc runs standalone whatever ``--anchor-mode`` says.

Each measurement also reads the CPU time of the worker's whole process tree (``/proc``)
before the create call and after the last record: the report's CPU seconds per 1,000,000
records tell a worker that costs more CPU per record from one that waited longer.

``--only connect-grpc`` runs connect-grpc's rounds alone (the same worker, topics and checks
of the sink file against the input, no anchor and so no ratio): for comparing connect-grpc
with itself, one commit against another (each from its own checkout) or one broker against
another, where the anchor's rounds would only halve the rounds per minute.

``--results FILE`` (``bench/results/headline.json``) also replaces the run's entries of the
headline results (``bench/headline.py``): for each pipeline run, the source's and the sink's
ratio from the create call and in the steady state, and the peak RSS's, with the run's date and
commit; ``make bench-table`` then writes them into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import headline  # the sibling module: BENCHMARKS.md's headline results
from cluster import machine  # the sibling bench's machine report
from connect_grpc_worker import (
    JAVA_VERSION_CONFIG,
    START_TIMEOUT_S,
    ConnectGrpcWorker,
    check_ran_java,
    java_creator,
    status_reader,
)
from connector_start import listed_ms, start_samples, start_table, tasks_rss
from kafka_connect import (  # the sibling module: the script's directory is on sys.path
    LINE_BYTES,
    KafkaConnectDistributed,
    KafkaConnectError,
    KafkaConnectStandalone,
    Timing,
    _consumer,
    connect_file_version,
    create_topic,
    ensure_connect_libs,
    measure_sink,
    measure_source,
    plugin_path,
    progress,
    sha256,
    sorted_lines_sha256,
    write_input,
)
from pipelines import PIPELINES  # the sibling module: the configs of --pipeline

from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.kafka.jars import KAFKA_VERSION
from connect_grpc.logs.output import configure_logging

ANCHOR = f"Kafka Connect {KAFKA_VERSION}"
OURS = "connect-grpc"

#: Lines of each sink file kept to show a difference between the two workers' files.
HEAD_LINES = 1000


@dataclass
class Result:
    #: Each round's FileStreamSource and FileStreamSink measurement.
    sources: list[Timing] = field(default_factory=list)
    sinks: list[Timing] = field(default_factory=list)
    peak_rss: list[int] = field(default_factory=list)
    #: The SHA-256 of each round's sink file.
    outputs: list[str] = field(default_factory=list)
    lines: int = 0

    def rates(self, timings: list[Timing]) -> list[float]:
        """Records/s of each round, from the create call."""
        return [self.lines / timing.elapsed_s for timing in timings]


def one_round(
    name: str,
    runner: KafkaConnectStandalone | ConnectGrpcWorker,
    bootstrap: str,
    root: Path,
    source_file: Path,
    lines: int,
    timeout: float,
    pipeline: str,
    partitions: int = 1,
    java: bool = False,
) -> tuple[Timing, Timing, str]:
    """Source then sink through ``runner``; their timings and the SHA-256 of the sink
    file (of its lines sorted, with several partitions: the input's lines sort as they
    are written). ``java``: both connectors ask for ``connect-file``'s version (KIP-891),
    and connect-grpc's must have run it."""
    topic = f"bench-{name.split()[0].lower()}-{root.name}"
    sink_file = root / f"{topic}.txt"
    source_extra, sink_extra = PIPELINES[pipeline]
    if java:
        source_extra = {**source_extra, **JAVA_VERSION_CONFIG}
        sink_extra = {**sink_extra, **JAVA_VERSION_CONFIG}
    with _consumer(bootstrap) as consumer:
        create_topic(bootstrap, topic, consumer, partitions)
        source = measure_source(
            runner, consumer, source_file, topic, lines, None, timeout, source_extra, partitions
        )
    progress(f"{name} FileStreamSource ({pipeline}): {_described(source, lines)}")
    sink = measure_sink(runner, sink_file, topic, lines, timeout, sink_extra)
    progress(f"{name} FileStreamSink ({pipeline}): {_described(sink, lines)}")
    if java and isinstance(runner, ConnectGrpcWorker):
        check_ran_java(runner, ("bench-file-source", "bench-file-sink"))
    output = sha256(sink_file) if partitions == 1 else sorted_lines_sha256(sink_file)
    if pipeline == "none" and output != sha256(source_file):
        raise RuntimeError(f"{name}: {sink_file} differs from the input")
    # the first lines stay, to show how the two workers' files differ if they do
    with sink_file.open("rb") as whole, (root / "sink-head.txt").open("wb") as head:
        head.writelines(line for _, line in zip(range(HEAD_LINES), whole, strict=False))
    sink_file.unlink()
    return source, sink, output


def _described(timing: Timing, lines: int) -> str:
    return (f"{lines / timing.elapsed_s:,.0f} records/s from the create call (first record "
            f"after {timing.first_s * 1000:.0f} ms, then {timing.steady_rate:,.0f} records/s)")


def start_runner(
    name: str, root: Path, bootstrap: str, libs: Path, java: bool = False,
    distributed_anchor: bool = False,
) -> KafkaConnectStandalone | ConnectGrpcWorker:
    """Starts the anchor or connect-grpc; ``java``: connect-grpc hosts Kafka's FileStream
    classes from the anchor's own ``plugin.path`` (the same jars); ``distributed_anchor``:
    Kafka Connect runs ``ConnectDistributed``, alone in a group of its own, and so does a
    connect-grpc hosting Java classes."""
    started = time.monotonic()
    runner: KafkaConnectStandalone | ConnectGrpcWorker
    if name == ANCHOR and distributed_anchor:
        runner = KafkaConnectDistributed(root, bootstrap, f"bench-kc-{root.name}",
                                         libs_dir=libs, die_with_parent=True)
    elif name == ANCHOR:
        runner = KafkaConnectStandalone(root, bootstrap, libs_dir=libs, die_with_parent=True)
    else:
        plugins = plugin_path(libs) if java else None
        if java and plugins is None:
            raise RuntimeError(f"no plugin.path beside {libs}: connect-file is on Kafka "
                               f"Connect's classpath, not a plugin connect-grpc can host")
        runner = ConnectGrpcWorker(root, bootstrap, plugins, distributed_anchor)
    runner.start(START_TIMEOUT_S)
    progress(f"{name} up in {time.monotonic() - started:.1f} s (not timed)")
    return runner


def _rounds(result: Result) -> str:
    pairs = zip(result.rates(result.sources), result.rates(result.sinks), strict=True)
    return ", ".join(f"{source:,.0f} / {sink:,.0f}" for source, sink in pairs)


def _start_and_steady(anchor: Result, ours: Result) -> list[str]:
    """The table that tells a rate from the create call apart into the start (until the
    first record) and the steady rate (between 10 % and 90 % of N)."""
    out = [
        "| pipeline | first record, Kafka Connect / connect-grpc (ms) | steady state, "
        "Kafka Connect / connect-grpc (records/s) | steady ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, theirs, mine in (
        ("FileStreamSource", anchor.sources, ours.sources),
        ("FileStreamSink", anchor.sinks, ours.sinks),
    ):
        first_a = statistics.median(t.first_s for t in theirs) * 1000
        first_b = statistics.median(t.first_s for t in mine) * 1000
        steady_a = statistics.median(t.steady_rate for t in theirs)
        steady_b = statistics.median(t.steady_rate for t in mine)
        out.append(f"| {label} | {first_a:,.0f} / {first_b:,.0f} | {steady_a:,.0f} / "
                   f"{steady_b:,.0f} | {steady_b / steady_a:.2f}x |")
    out += ["", "CPU seconds of the worker's whole process tree per 1,000,000 records, from "
            "the create call until the last (medians of the rounds):", "",
            "| pipeline | Kafka Connect | connect-grpc | ratio |", "|---|---:|---:|---:|"]
    for label, theirs, mine in (
        ("FileStreamSource", anchor.sources, ours.sources),
        ("FileStreamSink", anchor.sinks, ours.sinks),
    ):
        cpu_a = statistics.median(t.cpu_s for t in theirs) * 1e6 / anchor.lines
        cpu_b = statistics.median(t.cpu_s for t in mine) * 1e6 / ours.lines
        out.append(f"| {label} | {cpu_a:.2f} | {cpu_b:.2f} | {cpu_b / cpu_a:.2f}x |")
    return out


def report(
    results: dict[str, Result], lines: int, rounds: int, pipeline: str, partitions: int = 1
) -> str:
    anchor, ours = results[ANCHOR], results[OURS]
    settings = (
        "default connector settings (string converters, no transformation)"
        if pipeline == "none"
        else "JsonConverter (schemas.enable=true) and 4 SMTs on the source, 3 on the sink"
    )
    out = [
        f"Pipeline `{pipeline}`: N = {lines:,} lines of {LINE_BYTES} bytes, {partitions}-partition "
        f"topic, {settings}; median of {rounds} round(s)",
        "",
        "| pipeline | Kafka Connect (records/s) | connect-grpc (records/s) | ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, theirs, mine in (
        ("FileStreamSource file → topic", anchor.rates(anchor.sources), ours.rates(ours.sources)),
        ("FileStreamSink topic → file", anchor.rates(anchor.sinks), ours.rates(ours.sinks)),
    ):
        a, b = statistics.median(theirs), statistics.median(mine)
        out.append(f"| {label} | {a:,.0f} | {b:,.0f} | **{b / a:.2f}x** |")
    a_rss, b_rss = max(anchor.peak_rss), max(ours.peak_rss)
    out += ["", "Each rate told apart (medians of the rounds):", ""]
    out += _start_and_steady(anchor, ours)
    out += [
        "",
        f"Peak RSS of the whole worker process tree: Kafka Connect {a_rss / 2**20:,.0f} MiB, "
        f"connect-grpc {b_rss / 2**20:,.0f} MiB ({b_rss / a_rss:.2f}x).",
        "",
        "Rounds (records/s, source / sink): " + "; ".join(
            f"{name}: {_rounds(result)}" for name, result in results.items()
        ),
    ]
    return "\n".join(out) + "\n"


def report_ours(ours: Result, lines: int, pipeline: str, partitions: int) -> str:
    """``--only connect-grpc``: connect-grpc's rounds alone, no ratio (no anchor ran)."""
    out = [
        f"Pipeline `{pipeline}`, connect-grpc alone (no anchor ran): N = {lines:,} lines of "
        f"{LINE_BYTES} bytes, {partitions}-partition topic; each round",
        "",
        "| round | FileStreamSource (records/s) | FileStreamSink (records/s) | sink's first "
        "record (ms) | sink steady (records/s) | peak RSS (MiB) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    rounds = zip(ours.rates(ours.sources), ours.rates(ours.sinks), ours.sinks, ours.peak_rss,
                 strict=True)
    for index, (source, sink, timing, rss) in enumerate(rounds, start=1):
        out.append(f"| {index} | {source:,.0f} | {sink:,.0f} | {timing.first_s * 1000:,.0f} | "
                   f"{timing.steady_rate:,.0f} | {rss / 2**20:,.0f} |")
    return "\n".join(out) + "\n"


#: How a headline entry names each pipeline.
PIPELINE_LABELS = {
    "none": "bytes path (`--pipeline none`)",
    "json-smts": "JsonConverter and SMTs (`--pipeline json-smts`)",
}


def headline_entries(
    results: dict[str, Result],
    lines: int,
    pipeline: str,
    partitions: int,
    run: tuple[str, str, str],
) -> list[headline.Entry]:
    """The headline entries of one pipeline's results (the ratios ``report`` prints): each
    rate from the create call and in the steady state, then the peak RSS; ``run`` is the
    date, the commit and the command."""
    anchor, ours = results[ANCHOR], results[OURS]
    date, commit, command = run
    rounds = len(ours.sources)
    suffix = "" if lines == 1_000_000 else f".n{lines}"
    where = (f"{PIPELINE_LABELS[pipeline]}, {partitions} "
             f"{'partition' if partitions == 1 else 'partitions'}, {lines:,} lines")
    common = {
        "bench": "filestream",
        "anchor": f"Kafka Connect {KAFKA_VERSION} standalone (connect-file "
                  f"{connect_file_version()}), started by the bench (jars from "
                  f"Maven Central, bench/kafka_connect.py); the same connector configs, the "
                  f"same run",
        "date": date,
        "commit": commit,
        "command": command,
        "source": "recorded by bench/filestream.py --results (the run's whole report is its "
                  "stdout)",
    }

    def listed(values: list[float]) -> str:
        return ", ".join(f"{value:,.0f}" for value in values)

    def from_create(timing: Timing) -> float:
        return lines / timing.elapsed_s

    def steady(timing: Timing) -> float:
        return timing.steady_rate

    rates: tuple[tuple[str, str, Callable[[Timing], float]], ...] = (
        ("create", "records/s from the create call", from_create),
        ("steady", "steady-state records/s (between 10 % and 90 % of N)", steady),
    )
    entries = []
    for kind, label, theirs, mine in (
        ("source", "FileStreamSource file → topic", anchor.sources, ours.sources),
        ("sink", "FileStreamSink topic → file", anchor.sinks, ours.sinks),
    ):
        for rate, what, of in rates:
            a = [of(timing) for timing in theirs]
            b = [of(timing) for timing in mine]
            entries.append(headline.Entry(
                id=f"filestream.{kind}.{pipeline}.p{partitions}{suffix}.{rate}",
                measure=f"{label}, {where}: {what}",
                ratio=f"{statistics.median(b) / statistics.median(a):.2f}x",
                better="higher",
                spread=f"ours {listed(b)}, Kafka Connect {listed(a)} records/s ({rounds} "
                       f"round{'s' if rounds > 1 else ''}; the medians' ratio)",
                **common,
            ))
    a_rss, b_rss = max(anchor.peak_rss) / 2**20, max(ours.peak_rss) / 2**20
    entries.append(headline.Entry(
        id=f"filestream.rss.{pipeline}.p{partitions}{suffix}",
        measure=f"Peak RSS of the worker's whole process tree, {where}",
        ratio=f"{b_rss / a_rss:.2f}x",
        better="lower",
        spread=f"ours {b_rss:,.0f} MiB, Kafka Connect {a_rss:,.0f} MiB (the highest of "
               f"{rounds} round{'s' if rounds > 1 else ''})",
        **common,
    ))
    return entries


def run_pipeline(
    args: argparse.Namespace, root: Path, bootstrap: str, libs: Path, pipeline: str
) -> dict[str, Result]:
    """Every round of ``pipeline`` on both workers; fails if their sink files differ."""
    source_file = root / "input.txt"
    results = {ANCHOR: Result(lines=args.lines), OURS: Result(lines=args.lines)}
    for round_ in range(args.rounds):
        order = [ANCHOR, OURS] if round_ % 2 == 0 else [OURS, ANCHOR]
        if args.only == OURS:
            order = [OURS]
        for name in order:
            work = root / f"{pipeline}-{name.split()[0].lower()}-{round_}"
            runner = start_runner(name, work, bootstrap, libs, args.java,
                                  args.anchor_mode == "distributed")
            try:
                source, sink, output = one_round(
                    name, runner, bootstrap, work, source_file, args.lines, args.timeout,
                    pipeline, args.partitions, args.java,
                )
            finally:
                runner.stop()
            result = results[name]
            result.sources.append(source)
            result.sinks.append(sink)
            result.peak_rss.append(max(source.peak_rss, sink.peak_rss))
            result.outputs.append(output)
        if args.only == OURS:
            continue  # the sink file was checked against the input (bytes path) or not at all
        if results[ANCHOR].outputs[-1] != results[OURS].outputs[-1]:
            heads = [
                (root / f"{pipeline}-{name.split()[0].lower()}-{round_}" / "sink-head.txt")
                .read_text(encoding="utf-8", errors="replace").splitlines()
                for name in (ANCHOR, OURS)
            ]
            first = next((pair for pair in zip(*heads, strict=False) if pair[0] != pair[1]),
                         ("(same first lines)", ""))
            raise RuntimeError(f"{pipeline}: the sink files of the two workers differ; "
                               f"first difference:\n  {ANCHOR}: {first[0]}\n  {OURS}: {first[1]}")
    return results


def run_starts(
    args: argparse.Namespace, root: Path, bootstrap: str, libs: Path
) -> str:
    """``--start-samples`` starts of a Java FileStreamSource on each system, then the RSS of
    each worker's process tree with ``--rss-tasks`` of its tasks running; the report's
    section."""
    starts = {}
    rss = {}
    for name in (ANCHOR, OURS):
        work = root / f"starts-{name.split()[0].lower()}"
        runner = start_runner(name, work, bootstrap, libs, args.java,
                              args.anchor_mode == "distributed")
        try:
            status = status_reader(runner)
            create = java_creator(runner)
            starts[name] = start_samples(status, create, runner.delete_connector, work,
                                         args.start_samples, name)
            if isinstance(runner, ConnectGrpcWorker):
                check_ran_java(runner, tuple(f"bench-start-{i}"
                                             for i in range(args.start_samples)))
            if args.rss_tasks:
                rss[name] = tasks_rss(status, create, runner.delete_connector, runner.rss_bytes,
                                      work, args.rss_tasks, name)
        finally:
            runner.stop()
    out = [
        f"Start of a Java FileStreamSource (connect-file {connect_file_version()}, a one-line "
        f"file), median of {args.start_samples} starts one after the other on a fresh worker "
        f"(status polled every 10 ms):",
        "",
        *start_table(starts[ANCHOR], starts[OURS]),
        "",
        f"Each start's task RUNNING (ms): Kafka Connect {listed_ms(starts[ANCHOR])}; "
        f"connect-grpc {listed_ms(starts[OURS])}.",
    ]
    if rss:
        (a_before, a_with), (b_before, b_with) = rss[ANCHOR], rss[OURS]
        out += ["", f"RSS of the worker's whole process tree with {args.rss_tasks} Java "
                    f"FileStreamSource tasks RUNNING (one connector each): Kafka Connect "
                    f"{a_with / 2**20:,.0f} MiB ({a_before / 2**20:,.0f} before), connect-grpc "
                    f"{b_with / 2**20:,.0f} MiB ({b_before / 2**20:,.0f} before): "
                    f"**{b_with / a_with:.2f}x**."]
    return "\n".join(out) + "\n"


def warm_producer_ids(bootstrap: str) -> None:
    """One record from an idempotent producer, before any timing: a fresh broker's first
    producer id waits for a block of ids from the controller (librdkafka is told "coordinator
    load in progress" and asks again 500 ms later), which whichever worker's idempotent
    producer came first would pay, once per broker."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    producer.produce("bench-warm-producer-ids", b"warm")
    if producer.flush(30) != 0:
        raise RuntimeError("the broker took no record from an idempotent producer in 30 s")


def _java_mode(anchor_mode: str) -> str:
    return ("a distributed worker alone in its group" if anchor_mode == "distributed"
            else "a standalone worker")


def run(args: argparse.Namespace, root: Path) -> int:
    load_before = os.getloadavg()
    # connect-grpc alone needs no anchor jars (its Java plugins, which do, need --only both)
    libs = ensure_connect_libs() if args.only != OURS else Path()
    write_input(root / "input.txt", args.lines)
    pipelines = ["none", "json-smts"] if args.pipeline == "both" else [args.pipeline]
    broker = LocalKafka(root / "kafka", die_with_parent=True)
    reports = []
    recorded: list[headline.Entry] = []
    try:
        bootstrap = broker.start()
        warm_producer_ids(bootstrap)
        for pipeline in pipelines:
            results = run_pipeline(args, root, bootstrap, libs, pipeline)
            if args.only == OURS:
                reports.append(report_ours(results[OURS], args.lines, pipeline, args.partitions))
                continue
            reports.append(report(results, args.lines, args.rounds, pipeline, args.partitions))
            if args.run is not None:
                recorded += headline_entries(
                    results, args.lines, pipeline, args.partitions, args.run
                )
        if args.java and args.start_samples:
            reports.append(run_starts(args, root, bootstrap, libs))
    finally:
        broker.stop()
    out = sys.stdout
    out.write("\n")
    report_lines = {
        **machine(load_before),
        "Kafka Connect": "not run (--only connect-grpc)" if args.only == OURS else (
            f"{KAFKA_VERSION} ({args.anchor_mode}; connect-file {connect_file_version()})"),
        "connect-grpc's FileStream": (
            f"Kafka's Java classes (connect-file {connect_file_version()}, the anchor's "
            f"plugin.path; {_java_mode(args.anchor_mode)})" if args.java
            else "its Python built-ins (standalone)"),
    }
    for key, value in report_lines.items():
        out.write(f"- {key}: {value}\n")
    for text in reports:
        out.write("\n" + text)
    if args.results is not None:
        headline.record(args.results, recorded)
        progress(f"{len(recorded)} headline entries written to {args.results}; "
                 f"`make bench-table` puts them in BENCHMARKS.md")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--lines", type=int, default=1_000_000, help="lines (records) to move")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of both workers")
    parser.add_argument("--timeout", type=float, default=600.0, help="longest phase (s)")
    parser.add_argument("--pipeline", choices=["none", "json-smts", "both"], default="none",
                        help="the connectors' converters and transformations (see above)")
    parser.add_argument("--partitions", type=int, default=1,
                        help="partitions of the topic between the two connectors")
    parser.add_argument("--connect-grpc-plugins", choices=["python", "java"], default="python",
                        help="connect-grpc's FileStream classes: its Python built-ins, or "
                             "Kafka's Java ones from the anchor's plugin.path (see above)")
    parser.add_argument("--anchor-mode", choices=["standalone", "distributed"],
                        default="standalone",
                        help="Kafka Connect's ConnectStandalone, or ConnectDistributed alone in "
                             "a group of its own; with java plugins connect-grpc runs so too")
    parser.add_argument("--start-samples", type=int, default=5,
                        help="with java plugins: connector starts timed on each system")
    parser.add_argument("--rss-tasks", type=int, default=10,
                        help="with java plugins: tasks running while the RSS is read (0: no)")
    parser.add_argument("--only", choices=["both", OURS], default="both",
                        help="connect-grpc: run connect-grpc's rounds alone (no anchor, no "
                             "ratio), to compare its code or its broker between runs")
    parser.add_argument("--results", type=Path, metavar="FILE",
                        help="replace this run's entries of this headline JSON "
                             "(bench/results/headline.json), with its date and commit")
    args = parser.parse_args(argv)
    if args.lines < 1 or args.rounds < 1 or args.partitions < 1:
        parser.error("--lines, --rounds and --partitions must be at least 1")
    if args.start_samples < 0 or args.rss_tasks < 0:
        parser.error("--start-samples and --rss-tasks must be at least 0")
    args.java = args.connect_grpc_plugins == "java"
    if args.only == OURS and (args.results is not None or args.java):
        parser.error("--only connect-grpc has no anchor to compare with: --results and "
                     "--connect-grpc-plugins java need both systems")
    if args.java and args.results is not None:
        parser.error("--results records the Python built-ins' rows only: the Java runs' "
                     "go to bench/results/history/java_filestream.md by hand")
    # with --results: the run's date and commit, taken when it starts, and the command that
    # repeats it
    args.run = None if args.results is None else (*headline.stamp(), (
        f".venv/bin/python bench/filestream.py --lines {args.lines} --rounds {args.rounds}"
        + (f" --pipeline {args.pipeline}" if args.pipeline != "none" else "")
        + (f" --partitions {args.partitions}" if args.partitions != 1 else "")
    ))
    configure_logging("console", "WARNING")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-filestream-") as tmp:
            return run(args, Path(tmp))
    except KafkaConnectError as exc:
        progress(f"error: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())

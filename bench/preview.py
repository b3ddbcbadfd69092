"""PreviewPipeline's latency over gRPC, next to a bare grpcio unary call (issue 26's goal:
p50 <= 20 ms for 100 sample records through JsonConverter + 3 SMTs).

Run from the repository root::

    .venv/bin/python bench/preview.py [--calls N] [--warmup W] [--records R]

Starts, each as a subprocess of its own (as a worker is):

* a worker's gRPC server (``ApiServer``) over a standalone herder whose runtime runs
  nothing (a preview of samples needs no broker and no Spark; the worker's logs at
  WARNING, its garbage collector tuned as a worker's runtime tunes it), and
* the anchor of ``bench/cluster.py``: a bare grpcio server whose one unary method returns
  the request's bytes.

Then N times, interleaved (the order rotating) after W unrecorded calls of each: the
anchor sent the serialised PreviewPipelineRequest's bytes, and PreviewPipeline itself with
R sample records (struct values in JsonConverter envelopes) through a sink config:
``value.converter=JsonConverter`` (schemas enabled), then InsertField$Value,
ReplaceField$Value and MaskField$Value; the typed client's call (``ConnectClient``:
request built and answer read into the preview's values) and the raw stub's (bytes in,
message out) are both timed. Reported: p50 / p90 / p99 of each, the request's and the
answer's sizes, and the ratio of the p50s to the anchor's.

The Markdown table goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import grpc
from cluster import EchoServer, Latencies, interleaved  # the sibling bench's

from connect_grpc.api.server import ApiServer
from connect_grpc.client import ConnectClient
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kafka.ports import free_port
from connect_grpc.kernel.gc_tuning import tune_for_batches
from connect_grpc.logs.output import configure_logging
from connect_grpc.pipeline.preview_convert import request_to_pb
from connect_grpc.pipeline.preview_model import PreviewRequest, SampleRecord
from connect_grpc.storage.file_offsets import FileOffsetStore
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

CALL_TIMEOUT_S = 30.0
TRANSFORMS = "org.apache.kafka.connect.transforms."

CONFIG = {
    "name": "bench-preview",
    "connector.class": "FileStreamSink",
    "topics": "orders",
    "file": "/tmp/bench-preview-never-written.txt",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "transforms": "insert,replace,mask",
    "transforms.insert.type": TRANSFORMS + "InsertField$Value",
    "transforms.insert.static.field": "source",
    "transforms.insert.static.value": "bench",
    "transforms.replace.type": TRANSFORMS + "ReplaceField$Value",
    "transforms.replace.renames": "name:customer",
    "transforms.mask.type": TRANSFORMS + "MaskField$Value",
    "transforms.mask.fields": "card",
}
SCHEMA = {
    "type": "struct", "optional": False,
    "fields": [
        {"type": "int64", "optional": False, "field": "id"},
        {"type": "string", "optional": False, "field": "name"},
        {"type": "string", "optional": True, "field": "card"},
        {"type": "double", "optional": False, "field": "amount"},
        {"type": "boolean", "optional": False, "field": "paid"},
    ],
}


def log(message: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


def samples(count: int) -> list[SampleRecord]:
    return [
        SampleRecord(
            key=str(index),
            value=json.dumps({"schema": SCHEMA, "payload": {
                "id": index, "name": f"customer-{index}", "card": "4111-1111-1111-1111",
                "amount": index * 1.25, "paid": index % 2 == 0,
            }}, separators=(",", ":")),  # compact, as JsonConverter writes it
            headers=(("trace", b"bench"),),
        )
        for index in range(count)
    ]


# --- the worker under test ----------------------------------------------------------------


class _NoTasks:
    """A worker runtime that runs nothing: a preview of samples starts no instance."""

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def connector_names(self) -> set[str]:
        return set()

    def task_ids(self) -> set[Any]:
        return set()


def serve_worker(port: int, offsets: Path) -> int:
    """Serves ConnectService on ``port`` until SIGTERM (the worker's logs at WARNING), with
    the garbage collector tuned as a worker's runtime tunes it."""
    configure_logging("console", "WARNING")
    tune_for_batches()
    config = WorkerConfig.from_properties({
        "bootstrap.servers": "127.0.0.1:1", "listeners": f"grpc://127.0.0.1:{port}",
        "worker.id": "bench",
    })
    herder = StandaloneHerder(
        config, Plugins(), FileOffsetStore(offsets), lambda board: _NoTasks()  # type: ignore[arg-type,return-value]
    )
    herder.start()
    server = ApiServer(herder, "127.0.0.1", port)
    server.start()
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    stopped.wait()
    server.stop(1)
    herder.stop()
    return 0


class WorkerServer:
    """The worker under test, in a subprocess of its own."""

    def __init__(self, offsets: Path) -> None:
        self.address = f"127.0.0.1:{(port := free_port())}"
        command = [sys.executable, str(Path(__file__).resolve()), "--worker-server", str(port),
                   "--offsets", str(offsets)]
        self._process = subprocess.Popen(command)
        self.channel = grpc.insecure_channel(self.address)
        try:
            grpc.channel_ready_future(self.channel).result(timeout=60)
        except grpc.FutureTimeoutError:
            self.stop()
            raise RuntimeError("the worker's gRPC server did not start") from None
        self.stub = pb_grpc.ConnectServiceStub(self.channel)

    def stop(self) -> None:
        self.channel.close()
        if self._process.poll() is None:
            self._process.terminate()
            self._process.wait(30)


# --- the run ------------------------------------------------------------------------------


def run(calls: int, warmup: int, records: int, offsets: Path) -> str:
    sample = samples(records)
    request = request_to_pb(PreviewRequest(config=CONFIG, samples=tuple(sample)))
    payload = request.SerializeToString()
    anchor = EchoServer()
    worker = WorkerServer(offsets)
    try:
        client = ConnectClient(worker.address, timeout=CALL_TIMEOUT_S)
        answer = worker.stub.PreviewPipeline(request, timeout=CALL_TIMEOUT_S)
        outcomes = {pb.PreviewOutcome.Name(r.outcome) for r in answer.records}
        stages = len(answer.records[0].stages)  # value and header converters, 3 SMTs
        log(f"{len(answer.records)} records previewed, {stages} stages each, {outcomes}")
        if outcomes != {"PREVIEW_OUTCOME_DELIVERED"} or stages != 5:
            raise RuntimeError(f"unexpected preview: {outcomes}, {stages} stages")
        bare = Latencies(f"anchor: bare grpcio unary echo ({len(payload)}-byte request)")
        raw = Latencies("PreviewPipeline, raw stub")
        typed = Latencies("PreviewPipeline, typed client (ConnectClient)")
        log(f"{warmup} unrecorded then {calls} recorded calls of each, interleaved")
        interleaved(
            [
                (bare, lambda: anchor.call(payload, timeout=CALL_TIMEOUT_S)),
                (raw, lambda: worker.stub.PreviewPipeline(request, timeout=CALL_TIMEOUT_S)),
                (typed, lambda: client.preview_pipeline(config=CONFIG, samples=sample)),
            ],
            calls,
            warmup,
        )
        client.close()
    finally:
        worker.stop()
        anchor.stop()
    anchor_p50 = bare.ms(50)
    lines = [
        f"PreviewPipeline of {records} records (JsonConverter + 3 SMTs), {calls} calls "
        f"(request {len(payload)} bytes, answer {answer.ByteSize()} bytes)",
        "",
        "| call | p50 ms | p90 ms | p99 ms | p50 / anchor's |",
        "|---|---:|---:|---:|---:|",
    ]
    for measured in (bare, raw, typed):
        lines.append(
            f"| {measured.label} | {measured.ms(50):.2f} | {measured.ms(90):.2f} | "
            f"{measured.ms(99):.2f} | {measured.ms(50) / anchor_p50:.1f}x |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--calls", type=int, default=200, help="recorded calls of each kind")
    parser.add_argument("--warmup", type=int, default=20, help="unrecorded calls of each kind")
    parser.add_argument("--records", type=int, default=100, help="sample records per call")
    parser.add_argument("--worker-server", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--offsets", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker_server is not None:
        return serve_worker(args.worker_server, args.offsets)
    configure_logging("console", "WARNING")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-preview-") as directory:
        sys.stdout.write(run(args.calls, args.warmup, args.records,
                             Path(directory) / "offsets.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

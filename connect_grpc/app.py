"""The composition root: wires stores, runtime, herder and the gRPC server into a process."""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

import structlog

from connect_grpc.api.server import ApiServer
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.errors import AlreadyExistsError, InvalidArgumentError, StartupError
from connect_grpc.herder.connector_files import ConnectorRequest
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.storage.file_offsets import FileOffsetStore
from connect_grpc.worker_config import WorkerConfig

log = structlog.get_logger(__name__)


class StandaloneProcess:
    """A standalone worker: herder + gRPC server, stopped by ``shutdown()`` or a signal."""

    def __init__(self, config: WorkerConfig) -> None:
        if config.offset_file is None:
            raise InvalidArgumentError.for_field(
                "offset.storage.file.filename", "is required in standalone mode"
            )
        self.config = config
        self.herder = StandaloneHerder(
            config,
            Plugins(config.plugin_path, include_testing=config.test_plugins_enabled),
            FileOffsetStore(config.offset_file),
        )
        self.server = ApiServer(
            self.herder, config.listener_host, config.listener_port, config.limits
        )
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._handle_signals = False

    def start(self, connector_files: Sequence[tuple[Path, ConnectorRequest]] = ()) -> None:
        """Starts the herder and the server, then creates the connectors of the files given
        (already read). A connector a file describes that cannot be created is a
        StartupError naming the file."""
        self.herder.start()
        if self._handle_signals:
            self.install_signal_handlers()
        self.server.start()
        for path, request in connector_files:
            try:
                self.herder.create_connector(
                    request.name, request.config, request.initial_state, request.initial_offsets
                )
            except (InvalidArgumentError, AlreadyExistsError) as exc:
                raise StartupError(
                    f"the connector of {path} cannot be created: {exc.message}",
                    fix=f"fix the connector in {path}",
                    file=str(path),
                ) from None
            log.info("connector_file_loaded", path=str(path), connector=request.name)

    def shutdown(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        log.info("worker_stopping")
        try:
            self.server.stop()
            self.herder.stop()
        finally:
            self._stopped.set()
        log.info("worker_stopped")

    def wait(self, timeout: float | None = None) -> None:
        """Blocks until ``shutdown()`` has finished (or the timeout passes)."""
        self._stopped.wait(timeout)

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT shut the worker down gracefully. Installed again once Spark has
        started, because PySpark's SparkContext replaces the SIGINT handler with its own."""
        self._handle_signals = True
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("signal_received", signal=signal.Signals(signum).name)
        threading.Thread(target=self.shutdown, name="shutdown").start()

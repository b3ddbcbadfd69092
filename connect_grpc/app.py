"""The composition root: wires stores, runtime, herder and the gRPC server into a process."""

from __future__ import annotations

import contextlib
import faulthandler
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

import structlog
from prometheus_client import CollectorRegistry

from connect_grpc.api.cluster_service import TaskConfigSender
from connect_grpc.api.forwarding import Forwarder
from connect_grpc.api.idempotency import RequestLog
from connect_grpc.api.server import ApiServer
from connect_grpc.api.tls import PeerCredentials
from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.config.connector_files import ConnectorRequest
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.providers import ConfigProviderError
from connect_grpc.config_providers.specs import JAVA, ProviderSpec
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.interface import Herder
from connect_grpc.herder.java_plugins import JavaPlugins
from connect_grpc.herder.recorded_answers import ANSWER_TTL_S
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.herder.validation import check_config_size, config_with_name, validate_name
from connect_grpc.kernel.errors import (
    AlreadyExistsError,
    ConnectError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    StartupError,
    UnavailableError,
)
from connect_grpc.kernel.start_phases import StartPhases, recording, start_phase
from connect_grpc.metrics.endpoint import MetricsEndpoint, serve_metrics
from connect_grpc.metrics.worker_metrics import WorkerMetrics
from connect_grpc.pipeline.build import check_worker_converters
from connect_grpc.pipeline.config import PipelineConfigError
from connect_grpc.runtime.java_connectors import JvmConnectors
from connect_grpc.runtime.java_plugins import java_catalogue_for
from connect_grpc.security.session_key import RequestSigner, RequestVerifier
from connect_grpc.storage.file_offsets import FileOffsetStore

log = structlog.get_logger(__name__)

#: A shutdown still under way after this long dumps every thread's stack to stderr (the
#: worker log): what a stop waits for is then on record before an orchestrator kills it.
SHUTDOWN_TRACE_AFTER_S = 30.0


class _ServingProcess:
    """A worker process: a herder behind a gRPC server, stopped by ``shutdown()`` or a
    signal. Subclasses build ``herder`` and ``server``."""

    herder: Herder
    server: ApiServer
    #: The Prometheus endpoint (``metrics.listener``); None when the property is unset.
    metrics_endpoint: MetricsEndpoint | None = None

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._handle_signals = False
        self.metrics = WorkerMetrics()
        #: How long each phase of ``start`` took (the ``worker_ready`` log line's fields).
        self.start_phases = StartPhases()

    def _api_metrics(self, config: WorkerConfig) -> CollectorRegistry | None:
        """Where the gRPC server counts its calls: nowhere unless metrics are served."""
        return self.metrics.registry if config.metrics_listener is not None else None

    def _serve_metrics(self, config: WorkerConfig) -> None:
        """Starts the Prometheus endpoint, last of what the constructor builds: a port
        that cannot be bound is then a start-up error before anything else started."""
        self.metrics_endpoint = serve_metrics(config.metrics_listener, self.metrics.registry)

    def shutdown(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        log.info("worker_stopping")
        faulthandler.dump_traceback_later(SHUTDOWN_TRACE_AFTER_S)
        try:
            self.server.stop()
            self.herder.stop()
            self._close()
        finally:
            if self.metrics_endpoint is not None:
                self.metrics_endpoint.stop()
            faulthandler.cancel_dump_traceback_later()
            self._stopped.set()
        log.info("worker_stopped")

    def _close(self) -> None:
        """What a subclass closes after the herder stopped."""

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


class DistributedProcess(_ServingProcess):
    """A worker of a cluster (``connect-grpc distributed``): DistributedHerder, the gRPC
    server with forwarding to the leader, and the workers' ClusterService."""

    def __init__(self, config: WorkerConfig, cluster: DistributedConfig) -> None:
        # imported here, not with this module: a standalone worker (and its start-up
        # errors) would otherwise pay for the distributed herder's modules too
        from connect_grpc.herder.distributed import DistributedHerder

        super().__init__()
        self.config = config
        tls = config.security.tls
        # calls to other workers: TLS when this worker's listener has it, signed with the
        # session key the herder reads from the config topic
        peers = PeerCredentials(tls) if tls is not None else None
        signer = RequestSigner(lambda: self.distributed.session_key())
        self._sender = TaskConfigSender(config.worker_id, signer, peers)
        plugins = _worker_plugins(config)
        # a distributed worker runs Java connectors (in its Spark driver's JVM)
        self._java_connectors = JvmConnectors.for_worker(config, {
            "offset.storage.topic": cluster.offset_topic,
            "offset.storage.partitions": str(cluster.offset_partitions),
            "offset.storage.replication.factor": str(cluster.offset_replication_factor),
            "group.id": cluster.group_id,
        })
        self._java_plugins = _java_plugins(config, plugins, self._java_connectors)
        _check_java_config_providers(config, self._java_plugins)
        self.herder = self.distributed = DistributedHerder(
            config,
            cluster,
            plugins,
            task_config_sender=self._sender,
            fencing_requester=self._sender.request_fencing,
            metrics=self.metrics,
            java_plugins=self._java_plugins,
        )
        self.metrics.watch_cluster(self.distributed)
        self._forwarder = Forwarder(
            config.worker_id,
            self.distributed.leader_address,
            view=self.distributed,
            signer=signer,
            credentials=peers,
            serves_itself=self.distributed.answers_writes,
        )
        self.server = ApiServer(
            self.herder,
            config.listener_host,
            config.listener_port,
            config.limits,
            forwarder=self._forwarder,
            cluster=self.distributed,
            request_log=RequestLog(ttl_seconds=ANSWER_TTL_S, shared=self.distributed),
            leads=self.distributed.answers_writes,
            metrics=self._api_metrics(config),
            security=config.security,
            verifier=RequestVerifier(self.distributed.session_keys),
        )
        self._serve_metrics(config)

    def start(self) -> None:
        """Starts the herder (topics, stores, Spark, group membership), then serves."""
        with recording(self.start_phases):
            self.herder.start()
            _open_java_config_providers(self.config, self._java_plugins)
            if self._handle_signals:
                self.install_signal_handlers()
            with start_phase("grpc_server"):
                self.server.start()

    def _close(self) -> None:
        self._forwarder.close()
        self._sender.close()
        if self._java_connectors is not None:
            self._java_connectors.close()


class StandaloneProcess(_ServingProcess):
    """A standalone worker: herder + gRPC server, stopped by ``shutdown()`` or a signal."""

    def __init__(self, config: WorkerConfig) -> None:
        super().__init__()
        offset_file = config.standalone_offset_file()
        self.config = config
        plugins = _worker_plugins(config)
        # Java connectors run here too (in the Spark driver's JVM), their tasks' source
        # offsets kept in the worker's offsets file as a Python task's; with no offsets
        # topic, a connector's offsetStorageReader() is refused (JvmConnectors)
        self._java_connectors = JvmConnectors.for_worker(
            config, {"offset.storage.file.filename": str(offset_file)}
        )
        self._java_plugins = _java_plugins(config, plugins, self._java_connectors)
        _check_java_config_providers(config, self._java_plugins)
        self.herder = StandaloneHerder(
            config,
            plugins,
            FileOffsetStore(offset_file),
            metrics=self.metrics,
            java_plugins=self._java_plugins,
        )
        self.server = ApiServer(
            self.herder,
            config.listener_host,
            config.listener_port,
            config.limits,
            metrics=self._api_metrics(config),
            security=config.security,
        )
        self._serve_metrics(config)

    def _close(self) -> None:
        if self._java_connectors is not None:
            self._java_connectors.close()

    def start(self, connector_files: Sequence[tuple[Path, ConnectorRequest]] = ()) -> None:
        """Checks the connectors of the files given (already read), starts the herder and the
        server, then creates those connectors. A connector a file describes that is invalid
        or cannot be created is a StartupError naming the file; what can be checked without
        Spark and Kafka is checked before they start."""
        self._check_connector_files(connector_files)
        with recording(self.start_phases):
            self.herder.start()
            _open_java_config_providers(self.config, self._java_plugins)
            if self._handle_signals:
                self.install_signal_handlers()
            # not ready before its files' connectors exist (KIP-1017's standalone start-up)
            with start_phase("grpc_server"):
                self.server.start(started=not connector_files)
            with start_phase("connector_files"):
                self._create_file_connectors(connector_files)
        self.server.mark_started()

    def _create_file_connectors(
        self, connector_files: Sequence[tuple[Path, ConnectorRequest]]
    ) -> None:
        self._await_java_scan(connector_files)
        for path, request in connector_files:
            try:
                self.herder.create_connector(
                    request.name, request.config, request.initial_state, request.initial_offsets
                )
            except ConnectError as exc:
                raise _connector_file_error(path, exc) from None
            log.info("connector_file_loaded", path=str(path), connector=request.name)

    def _check_connector_files(
        self, connector_files: Sequence[tuple[Path, ConnectorRequest]]
    ) -> None:
        """Name, size and config of each file's connector, and no name twice."""
        seen: dict[str, Path] = {}
        for path, request in connector_files:
            try:
                name = validate_name(request.name)
                config = config_with_name(name, request.config)
                check_config_size(config, self.config.limits.config_bytes)
                problems = self._file_config_problems(config)
            except ConnectError as exc:
                raise _connector_file_error(path, exc) from None
            if problems:
                raise _connector_file_error(path, _invalid_config(problems))
            if name in seen:
                raise _connector_file_error(path, AlreadyExistsError(
                    f"connector {name} is also defined by {seen[name]}"
                ))
            seen[name] = path

    def _await_java_scan(self, connector_files: Sequence[tuple[Path, ConnectorRequest]]) -> None:
        """Waits for the scan of ``plugin.path`` in the Spark driver's JVM (seconds, much
        longer on a loaded machine) when a file's connector may be a Java one, at most
        FILE_CONNECTOR_SCAN_WAIT_S: its create validates it with Kafka's validation, which
        needs the scan, and one create waits for it only a call's 30 s. A scan still not done
        then leaves that create to answer why, naming the file."""
        java = self._java_plugins
        if java is None:
            return
        for _, request in connector_files:
            try:
                java.java_connector(request.config.get("connector.class", ""), wait=False)
            except UnavailableError:
                log.info("connector_files_waiting_for_java_plugins",
                         timeout_s=FILE_CONNECTOR_SCAN_WAIT_S)
                with contextlib.suppress(ConnectError):
                    java.await_scan(FILE_CONNECTOR_SCAN_WAIT_S)
                return

    def _file_config_problems(self, config: dict[str, str]) -> list[tuple[str, str]]:
        """The config's validation errors, when it can be validated before the herder
        starts: a Java connector's validation is Kafka's, in the Spark driver's JVM, which
        starts with the herder (UNAVAILABLE until then), so it is left to its create, which
        validates it as any create does."""
        try:
            return self.herder.validate_config(config).all_errors()
        except UnavailableError:
            return []


#: What a connector file can cause by its content (exit 2); other errors are run-time (exit 1).
def _worker_plugins(config: WorkerConfig) -> Plugins:
    """The worker's plugins; a worker converter that cannot be used stops the start, as in
    Kafka Connect."""
    plugins = Plugins(config.plugin_path, include_testing=config.test_plugins_enabled)
    try:
        check_worker_converters(config, plugins)
    except PipelineConfigError as exc:
        raise StartupError(
            str(exc),
            fix="set key.converter, value.converter and header.converter to converter classes "
                "this worker has (a Kafka Connect class name, an alias, a Python path under "
                "plugin.path or an entry point), or leave them out",
        ) from exc
    return plugins


def _java_plugins(
    config: WorkerConfig, plugins: Plugins, connectors: JvmConnectors | None = None
) -> JavaPlugins | None:
    """The Java plugins of ``plugin.path`` beside the Python ones; None when it holds none
    (then nothing of the JVM side runs). Their scan waits for the first call needing it.
    With ``connectors``, Java connectors run; without, creating one is refused."""
    catalogue = java_catalogue_for(config)
    return None if catalogue is None else JavaPlugins(catalogue, plugins, connectors)


#: How long a standalone worker's start waits for the scan of plugin.path's Java plugins
#: before it creates its files' connectors, when one of them may be a Java connector.
FILE_CONNECTOR_SCAN_WAIT_S = 300.0


def _java_provider_specs(config: WorkerConfig) -> list[ProviderSpec]:
    return [spec for spec in config.config_providers if spec.kind == JAVA]


def _check_java_config_providers(config: WorkerConfig, java: JavaPlugins | None) -> None:
    """A Java config provider needs Java plugins on ``plugin.path``: without any, the start
    stops before Spark, naming the provider's property."""
    specs = _java_provider_specs(config)
    if specs and java is None:
        spec = specs[0]
        raise StartupError(
            f"config.providers.{spec.name}.class: {spec.class_name} is not a built-in config "
            f"provider, and plugin.path holds no Java plugins to find it in",
            fix="put the provider's jars in a directory of plugin.path, or name a built-in "
                "provider (FileConfigProvider, DirectoryConfigProvider, EnvVarConfigProvider)",
            property_name=f"config.providers.{spec.name}.class",
        )


def _open_java_config_providers(config: WorkerConfig, java: JavaPlugins | None) -> None:
    """Builds the worker's Java config providers, as Kafka Connect's worker builds its
    providers at its start: once the JVM has scanned ``plugin.path`` (waited for at most
    FILE_CONNECTOR_SCAN_WAIT_S), each is found, instantiated and configured; one that cannot
    be stops the start naming its property."""
    specs = _java_provider_specs(config)
    if not specs or java is None:
        return
    try:
        java.await_scan(FILE_CONNECTOR_SCAN_WAIT_S)
    except ConnectError as exc:
        raise StartupError(
            f"the worker's Java config providers need the scan of plugin.path: {exc.message}",
            fix="check the worker's log for the scan's failure (java_plugins_scan_failed), "
                "then start the worker again",
            exit_code=1,
        ) from None
    for spec in specs:
        field = f"config.providers.{spec.name}.class"
        try:
            java.config_lookup.open_config_provider(spec, FILE_CONNECTOR_SCAN_WAIT_S)
        except ConfigProviderError as exc:
            raise StartupError(
                f"{field}: {exc}",
                fix="name a config provider class of plugin.path (ListPlugins with "
                    "all_plugin_types lists them) and the parameters it takes "
                    f"(config.providers.{spec.name}.param.*)",
                property_name=field,
            ) from None
        except ConnectError as exc:  # the JVM did not answer in time
            raise StartupError(
                f"{field}: the config provider could not be built: {exc.message}",
                fix="check the worker's log, then start the worker again",
                property_name=field,
                exit_code=1,
            ) from None
        log.info("java_config_provider_opened", provider=spec.name, provider_class=spec.class_name)

_CONFIG_ERRORS = (InvalidArgumentError, AlreadyExistsError, NotFoundError, FailedPreconditionError)


def _invalid_config(problems: Sequence[tuple[str, str]]) -> InvalidArgumentError:
    lines = "; ".join(f"{key}: {message}" for key, message in problems)
    return InvalidArgumentError(
        f"the connector configuration contains {len(problems)} error(s): {lines}"
    )


def _connector_file_error(path: Path, exc: ConnectError) -> StartupError:
    """The start-up failure of the connector a file describes, naming the file."""
    if isinstance(exc, _CONFIG_ERRORS):
        return StartupError(
            f"the connector of {path} cannot be created: {exc.message}",
            fix=f"fix the connector in {path}",
            file=str(path),
        )
    return StartupError(
        f"the connector of {path} could not be created: {exc.message}",
        fix="check that Kafka (bootstrap.servers) is reachable, then start the worker again",
        file=str(path),
        exit_code=1,
    )

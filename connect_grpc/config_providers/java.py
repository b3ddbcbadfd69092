"""Java config providers of ``plugin.path`` (Vault's, a cloud secrets manager's, Strimzi's):
``${name:path:key}`` references resolved by the provider class the worker properties name,
built and configured in the worker's JVM as Kafka Connect's worker builds it.

This package knows nothing of that JVM: a worker whose ``plugin.path`` holds Java plugins
hands the transformer a :class:`JavaConfigLookup` (the worker's is the Java plugin catalogue,
``runtime.java_plugins.JvmPluginCatalogue``), and :class:`JavaConfigProvider` asks it.

A value is read at every resolution (a connector's or a task's start, a validation), as the
built-in providers read theirs. A Java provider may give its values a time to live
(``ConfigData.ttl``): the resolution carries it (``Resolution.ttls``), and the worker restarts
a connector whose values run out, as Kafka Connect does (``config.action.reload``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from connect_grpc.config_providers.providers import ConfigProviderError, ConfigValues
from connect_grpc.config_providers.specs import ProviderSpec
from connect_grpc.kernel.errors import ConnectError

__all__ = ["LOOKUP_TIMEOUT_S", "ConfigValues", "JavaConfigLookup", "JavaConfigProvider"]

#: How long one lookup waits for the JVM: the worker's own calls' bound.
LOOKUP_TIMEOUT_S = 30.0


class JavaConfigLookup(Protocol):
    """Builds a worker's Java config providers and asks them for values."""

    def open_config_provider(self, spec: ProviderSpec, timeout_s: float) -> None:
        """Builds (once) and configures the provider ``spec`` declares.

        Raises:
            ConfigProviderError: it cannot be built (no such class on ``plugin.path``, its
                ``configure`` threw); the message says why.
            ConnectError: the JVM did not answer within ``timeout_s`` (UNAVAILABLE).
        """
        ...

    def config_data(
        self, spec: ProviderSpec, path: str, keys: Collection[str], timeout_s: float
    ) -> ConfigValues:
        """The values of ``keys`` the provider finds at ``path`` (a key without one left out),
        with their time to live.

        Raises:
            ConfigProviderError: the provider threw, or cannot be built.
            ConnectError: the JVM did not answer within ``timeout_s``.
        """
        ...


class JavaConfigProvider:
    """A Java provider of ``plugin.path``, looked up through the worker's JVM."""

    def __init__(self, spec: ProviderSpec, lookup: JavaConfigLookup | None) -> None:
        self._spec = spec
        self._lookup = lookup

    def get(self, path: str, keys: Collection[str]) -> dict[str, str]:
        return dict(self.read(path, keys).values)

    def read(self, path: str, keys: Collection[str]) -> ConfigValues:
        """:meth:`get`'s values with the time to live the provider gave them."""
        if self._lookup is None:
            raise ConfigProviderError(
                f"provider {self._spec.name!r} is the Java class {self._spec.class_name}, and "
                "plugin.path holds no Java plugins"
            )
        try:
            return self._lookup.config_data(self._spec, path, keys, LOOKUP_TIMEOUT_S)
        except ConnectError as exc:  # the JVM not there, or not in time: this reference fails
            raise ConfigProviderError(
                f"provider {self._spec.name!r} ({self._spec.class_name}) did not answer: "
                f"{exc.message}"
            ) from None

    def why_missing(self, path: str, key: str) -> str:
        where = f" at path {path!r}" if path else ""
        return (f"the Java provider {self._spec.name!r} ({self._spec.class_name}) has no "
                f"value for key {key!r}{where}")

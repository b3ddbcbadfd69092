"""Finds ``${provider:[path:]key}`` references in a config, resolves them with the worker's
providers, and turns resolved task configs back into references.

The syntax is Kafka's (``ConfigTransformer``): the provider name runs to the first ``:``,
the optional path to the next one, the key to the closing ``}``; a value may hold several
references and text around them. Unlike Kafka, which leaves a reference it cannot resolve
in place, every reference must resolve: an unknown provider, a path that is not allowed or
cannot be read and a missing key are errors naming the config key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from connect_grpc.config_providers.java import JavaConfigLookup, JavaConfigProvider
from connect_grpc.config_providers.providers import (
    ConfigProvider,
    ConfigProviderError,
    build_provider,
)
from connect_grpc.config_providers.redaction import MIN_MASKED_LENGTH, SECRETS
from connect_grpc.config_providers.specs import CONFIG_PROVIDERS, JAVA, ProviderSpec
from connect_grpc.kernel.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    PreconditionViolation,
)

__all__ = [
    "ConfigReferenceError",
    "ConfigTransformer",
    "Reference",
    "Resolution",
    "has_references",
    "references",
    "reloads_when_expired",
    "resolve_worker_properties",
]

#: What a connector does when the values of its config's references expire (Kafka
#: Connect's ConnectorConfig key): ``restart`` (the default) restarts it, ``none`` nothing.
CONFIG_RELOAD_ACTION = "config.action.reload"
RELOAD_RESTART = "restart"
RELOAD_NONE = "none"

_REFERENCE = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")


@dataclass(frozen=True, slots=True)
class Reference:
    """One ``${provider:path:key}`` (``path`` is empty in ``${provider:key}``)."""

    text: str
    provider: str
    path: str
    key: str


def references(value: str) -> list[Reference]:
    """The references in a config value, in order."""
    return [_reference(match) for match in _REFERENCE.finditer(value)]


def has_references(value: str | None) -> bool:
    return value is not None and _REFERENCE.search(value) is not None


def _reference(match: re.Match[str]) -> Reference:
    return Reference(match.group(0), match.group(1), match.group(2) or "", match.group(3))


class ConfigReferenceError(FailedPreconditionError):
    """A config key's references cannot be resolved (now); the message says which and why,
    never a value."""

    reason = "CONFIG_REFERENCE_UNRESOLVED"

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(
            f"config {key}: {problem}",
            [PreconditionViolation("CONFIG_REFERENCE", key, problem)],
        )
        self.key = key
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Resolution:
    """A config with its references resolved, and what could not be."""

    #: The config; a key whose references did not all resolve keeps its raw value.
    config: dict[str, str]
    #: For each key whose references did not all resolve, why (one message per reference).
    problems: dict[str, list[str]] = field(default_factory=dict)
    #: How long the values of each (provider, path) read hold, in milliseconds, where its
    #: provider said (a Java provider's ``ConfigData.ttl``; the built-ins never do).
    ttls: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def ttl_ms(self) -> int | None:
        """How long the resolved config holds: the shortest of :attr:`ttls`, if any."""
        return min(self.ttls.values()) if self.ttls else None


_Source = tuple[str, str]  # (provider, path)


class ConfigTransformer:
    """Resolves references with the worker's providers (``config.providers``). Thread-safe.

    Every value it resolves is registered with ``redaction.SECRETS``, so that log lines
    never show it.
    """

    def __init__(self, providers: Mapping[str, ConfigProvider] | None = None) -> None:
        self._providers = dict(providers or {})

    @classmethod
    def from_specs(
        cls, specs: Iterable[ProviderSpec], java: JavaConfigLookup | None = None
    ) -> ConfigTransformer:
        """The providers ``specs`` declare; a Java one looks its values up through ``java``
        (the worker's Java plugins; None when ``plugin.path`` holds none)."""
        return cls({
            spec.name: JavaConfigProvider(spec, java) if spec.kind == JAVA else build_provider(spec)
            for spec in specs
        })

    @property
    def provider_names(self) -> tuple[str, ...]:
        return tuple(self._providers)

    def resolve_all(self, config: Mapping[str, str], leave_unknown: bool = False) -> Resolution:
        """Resolves every reference it can; reports the others per config key.
        ``leave_unknown``: a reference naming no provider of this worker stays as it is
        (Kafka's rule for the worker's own properties, KIP-421), not a problem."""
        wanted = {key: references(value) for key, value in config.items() if value}
        if leave_unknown:
            wanted = {key: [ref for ref in refs if ref.provider in self._providers]
                      for key, refs in wanted.items()}
        wanted = {key: refs for key, refs in wanted.items() if refs}
        if not wanted:
            return Resolution(dict(config))
        found, failed, ttls = self._look_up(ref for refs in wanted.values() for ref in refs)
        resolved = dict(config)
        problems: dict[str, list[str]] = {}

        def value_of(match: re.Match[str]) -> str:
            source = (match.group(1), match.group(2) or "")
            if leave_unknown and match.group(1) not in self._providers:
                return match.group(0)
            return found[source][match.group(3)]

        for key, refs in wanted.items():
            key_problems = [
                problem for ref in refs if (problem := self._problem(ref, found, failed))
            ]
            if key_problems:
                problems[key] = key_problems
            else:
                resolved[key] = _REFERENCE.sub(value_of, config[key])
        SECRETS.register(
            value for values in found.values() for value in values.values()
        )
        return Resolution(resolved, problems, ttls)

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """The config with every reference resolved.

        Raises:
            ConfigReferenceError: for the first key (in key order) a reference of which
                cannot be resolved.
        """
        return self.resolved(self.resolve_all(config))

    @staticmethod
    def resolved(resolution: Resolution) -> dict[str, str]:
        """The config of a resolution that resolved every reference.

        Raises:
            ConfigReferenceError: for the first key (in key order) with a problem.
        """
        if resolution.problems:
            key = min(resolution.problems)
            raise ConfigReferenceError(key, "; ".join(resolution.problems[key]))
        return resolution.config

    def _look_up(
        self, refs: Iterable[Reference]
    ) -> tuple[dict[_Source, dict[str, str]], dict[_Source, str], dict[_Source, int]]:
        """Each known (provider, path)'s values for the keys asked of it (one read per
        path, as Kafka does), why the ones that failed did, and the time to live of those
        whose provider gave one."""
        keys_by_source: dict[_Source, set[str]] = {}
        for ref in refs:
            if ref.provider in self._providers:
                keys_by_source.setdefault((ref.provider, ref.path), set()).add(ref.key)
        found: dict[_Source, dict[str, str]] = {}
        failed: dict[_Source, str] = {}
        ttls: dict[_Source, int] = {}
        for source, keys in keys_by_source.items():
            provider, path = source
            try:
                read = self._providers[provider].read(path, keys)
            except ConfigProviderError as exc:
                failed[source] = str(exc)
                continue
            found[source] = dict(read.values)
            if read.ttl_ms is not None:
                ttls[source] = read.ttl_ms
        return found, failed, ttls

    def _problem(
        self,
        ref: Reference,
        found: Mapping[_Source, Mapping[str, str]],
        failed: Mapping[_Source, str],
    ) -> str | None:
        provider = self._providers.get(ref.provider)
        if provider is None:
            return f"cannot resolve {ref.text}: {self._unknown_provider(ref.provider)}"
        source = (ref.provider, ref.path)
        if source in failed:
            return f"cannot resolve {ref.text}: {failed[source]}"
        if ref.key not in found[source]:
            return f"cannot resolve {ref.text}: {provider.why_missing(ref.path, ref.key)}"
        return None

    def _unknown_provider(self, name: str) -> str:
        if not self._providers:
            return (
                f"no config provider {name!r}: this worker has no config providers "
                f"(worker property {CONFIG_PROVIDERS})"
            )
        return (
            f"no config provider {name!r}: this worker's providers ({CONFIG_PROVIDERS}) are "
            f"{', '.join(self._providers)}"
        )

    @staticmethod
    def reverse(
        raw_connector_config: Mapping[str, str],
        resolved_connector_config: Mapping[str, str],
        task_configs: Sequence[Mapping[str, str]],
    ) -> list[dict[str, str]]:
        """Task configs a connector generated from its resolved config, with references
        where they hold resolved values, so the config topic and ListTasks show no secret.

        As Kafka Connect does, a task key that is also a connector key with references
        gets the connector's raw value. Beyond it, a task value equal to the resolved value
        of a connector key with references (at least ``MIN_MASKED_LENGTH`` characters) gets
        that key's raw value too: a connector that copies ``password`` to
        ``db.password`` does not store the secret. Each task resolves its config again.
        """
        with_refs = {
            key for key, value in raw_connector_config.items() if has_references(value)
        }
        raw_by_resolved = {
            resolved: raw_connector_config[key]
            for key in sorted(with_refs)
            if len(resolved := resolved_connector_config.get(key, "")) >= MIN_MASKED_LENGTH
        }
        reversed_configs: list[dict[str, str]] = []
        for task_config in task_configs:
            reversed_config = dict(task_config)
            for key, value in task_config.items():
                if key in with_refs:
                    reversed_config[key] = raw_connector_config[key]
                elif value in raw_by_resolved:
                    reversed_config[key] = raw_by_resolved[value]
            reversed_configs.append(reversed_config)
        return reversed_configs


def resolve_worker_properties(
    props: Mapping[str, str], specs: Sequence[ProviderSpec]
) -> dict[str, str]:
    """The worker's own properties with their references resolved, as Kafka resolves a
    worker config's (KIP-421): by the providers the same properties declare, the
    ``config.providers`` settings themselves left as they are, and a reference naming no
    declared provider left in place (Spark's own ``${env:NAME}`` substitution in a
    ``spark.*`` value, say). Unlike Kafka, a reference to a declared provider that does not
    resolve stops the start, rather than leaving a placeholder where a password was meant.

    Raises:
        InvalidArgumentError: naming the property whose reference does not resolve, or
            names a Java provider (built by the worker's JVM, which these properties start).
    """
    prefix = f"{CONFIG_PROVIDERS}."
    own = {key: value for key, value in props.items()
           if key != CONFIG_PROVIDERS and not key.startswith(prefix)}
    java = {spec.name: spec for spec in specs if spec.kind == JAVA}
    for key in sorted(own):
        for ref in references(own[key]):
            if ref.provider in java:
                raise InvalidArgumentError.for_field(
                    key, f"cannot resolve {ref.text}: {ref.provider!r} is a Java config provider "
                    f"({java[ref.provider].class_name}), which the worker's JVM builds after "
                    "reading these properties; a worker property resolves with the built-in "
                    "providers only")
    transformer = ConfigTransformer.from_specs(spec for spec in specs if spec.kind != JAVA)
    resolution = transformer.resolve_all(own, leave_unknown=True)
    if resolution.problems:
        key = min(resolution.problems)
        raise InvalidArgumentError.for_field(key, "; ".join(resolution.problems[key]))
    return {**props, **resolution.config}


def reloads_when_expired(config: Mapping[str, str]) -> bool:
    """Whether the connector restarts when its references' values expire
    (``config.action.reload``, ``restart`` unless set, case ignored as Kafka reads it)."""
    action = (config.get(CONFIG_RELOAD_ACTION) or RELOAD_RESTART).strip().lower()
    return action == RELOAD_RESTART

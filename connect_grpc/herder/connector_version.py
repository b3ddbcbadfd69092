"""The connector's version key (KIP-891): ``connector.plugin.version`` picks one of the
installed versions of the connector's class, as a Maven version range
(:mod:`connect_grpc.connectors.plugin_versions`); without it, the latest."""

from __future__ import annotations

from collections.abc import Mapping

from connect_grpc.connectors.api import Connector
from connect_grpc.connectors.plugin_versions import (
    CONNECTOR_VERSION,
    NoMatchingVersionError,
    VersionSpecError,
)
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.kernel.configdef import ConfigKey, ConfigType, Importance

__all__ = ["CONNECTOR_VERSION", "CONNECTOR_VERSION_KEY", "versioned_connector"]

#: Kafka Connect's definition (its default, the latest version, is not a fixed value).
CONNECTOR_VERSION_KEY = ConfigKey(
    CONNECTOR_VERSION, ConfigType.STRING, "Version of the connector.", default=None,
    importance=Importance.MEDIUM, group="Common", order_in_group=2,
    display_name="Connector version",
)


def versioned_connector(
    plugins: Plugins, class_name: str, config: Mapping[str, str], errors: list[str]
) -> Connector:
    """A new instance of ``class_name`` in the version ``connector.plugin.version`` asks
    for. When no installed version is in that range (or it is not a range), the error goes
    to ``errors`` (Kafka Connect's message, reported on the key) and the latest version is
    returned, so the rest of the config is still checked.

    Raises:
        NotFoundError: as ``Plugins.new_connector``.
    """
    try:
        return plugins.new_connector(class_name, config.get(CONNECTOR_VERSION))
    except (VersionSpecError, NoMatchingVersionError) as exc:
        errors.append(str(exc))
        return plugins.new_connector(class_name)

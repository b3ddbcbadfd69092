"""Deprecated home of the config definitions: use :mod:`connect_grpc.kernel.configdef`.

``ConfigDef`` and its helpers moved to ``connect_grpc.kernel.configdef`` so that the data model
(which defines the converters' and transformations' configs) does not import the plugin
package. Plugins written against this module keep loading: every name it had is still
here (the very objects of the new module), and importing it warns once
(``DeprecationWarning``) naming the new module. It stays for as long as the plugin API's
deprecation policy says (docs/plugin-api.md).
"""

from __future__ import annotations

import warnings

import structlog

from connect_grpc.kernel.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    all_of,
    at_least,
    at_most,
    define_all,
    finite,
    java_trim,
    non_empty_list,
    non_empty_string,
    one_of_ignoring_case,
    parse_java_double,
    parse_java_integer,
    parse_value,
    single_topic,
    topic_name_error,
    valid_regex,
)

#: The names the module had before the move: the very objects of the new module.
__all__ = [
    "ConfigDef", "ConfigKey", "ConfigType", "Importance", "all_of", "at_least", "at_most",
    "define_all", "finite", "java_trim", "non_empty_list", "non_empty_string",
    "one_of_ignoring_case", "parse_java_double", "parse_java_integer", "parse_value",
    "single_topic", "topic_name_error", "valid_regex",
]

# A warning for the plugin's author (pytest and -W show it), and a log line for the
# operator, whose worker hides DeprecationWarning by default.
warnings.warn(
    "connect_grpc.connectors.config is deprecated: import ConfigDef and its helpers from "
    "connect_grpc.kernel.configdef",
    DeprecationWarning,
    stacklevel=2,
)
structlog.get_logger(__name__).warning(
    "plugin_api_deprecated", module=__name__, use="connect_grpc.kernel.configdef"
)

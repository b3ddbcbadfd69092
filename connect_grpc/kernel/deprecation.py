"""Old import paths kept working after a module moved: the old module warns once, when it
is first imported, and the worker logs it.

The warning (``DeprecationWarning``, shown by pytest and ``-W``) is for the author of the
code that imports the old path; the log line is for the operator, whose worker hides
``DeprecationWarning`` by default. How long an old path stays is the plugin API's
deprecation policy (docs/plugin-api.md).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

import structlog


def moved(old: str, new: str) -> Callable[[str], Any]:
    """Warns that module ``old`` is deprecated in favour of ``new``, and returns the old
    module's ``__getattr__``: any name of ``new``, its private ones included, read through
    ``old``. Call it from ``old``'s top level (``__getattr__ = moved(__name__, "…")``), so
    that the warning points at the line that imported ``old``; a star import of ``new`` there
    gives type checkers and ``import *`` its public names."""
    # 3: this function, the old module's top level, then its importer (warnings skips the
    # import machinery's frames in between).
    warnings.warn(f"{old} is deprecated: import from {new}", DeprecationWarning, stacklevel=3)
    structlog.get_logger(__name__).warning("plugin_api_deprecated", module=old, use=new)

    def module_getattr(name: str) -> Any:
        return getattr(importlib.import_module(new), name)

    return module_getattr

"""Deprecated home of the domain errors: use :mod:`connect_grpc.kernel.errors`.

The module moved into a package of its kind; code written against this path keeps working:
every name of the new module is here, the very same objects, and importing this module
warns once naming the new one (``kernel.deprecation``).
"""

from __future__ import annotations

from connect_grpc.kernel.deprecation import moved
from connect_grpc.kernel.errors import *  # noqa: F403 (the public names, for type checkers)

__getattr__ = moved(__name__, "connect_grpc.kernel.errors")

"""Deprecated home of the client's conversions: use :mod:`connect_grpc.client.convert`.

The module moved into a package of its kind; code written against this path keeps working:
every name of the new module is here, the very same objects, and importing this module
warns once naming the new one (``kernel.deprecation``).
"""

from __future__ import annotations

from connect_grpc.client.convert import *  # noqa: F403 (the public names, for type checkers)
from connect_grpc.kernel.deprecation import moved

__getattr__ = moved(__name__, "connect_grpc.client.convert")

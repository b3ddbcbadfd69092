"""Free TCP ports for the processes this project starts (the broker, workers in tests and
benchmarks), chosen where another process is least likely to take them first.

Separate from the broker (:mod:`.broker`) because tests, benchmarks and the shipped test
cluster choose their own processes' ports with it.

Public API
----------
``free_port(host: str = "127.0.0.1") -> int``
    A port unused now, below the kernel's ephemeral range where it can (no socket bound to
    port 0 elsewhere takes it before it is used).
``port_is_free(port: int, host: str = "127.0.0.1") -> bool``
    Whether ``port`` can be bound now.
``DEFAULT_BROKER_PORT: int``
    ``9092``: the port ``connect-grpc kafka start`` and ``dev`` use unless told otherwise
    (here, not in :mod:`.broker`, so that ``connect-grpc ctl`` names it without importing
    the broker manager).
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

DEFAULT_BROKER_PORT = 9092
#: The kernel's ephemeral ports (Linux): those it gives a socket bound to port 0 and an
#: outgoing connection's local end.
_EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: The lowest port ``free_port`` picks below the ephemeral range.
_LOWEST_PICKED_PORT = 10_000
#: Ports ``free_port`` tries below the ephemeral range before it asks the kernel for one.
_PORT_TRIES = 50
#: Not the ``random`` module's generator: pytest-randomly seeds it alike in every test
#: process, which would have them try the same ports in the same order.
_PORT_RANDOM = random.SystemRandom()
#: The ports ``free_port`` picked in this process: several processes made one after the
#: other (a cluster's workers) are given their ports before any listens, so a port free
#: when picked for one is still free when picked for the next.
_PICKED: set[int] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` unused now, for a process started later to listen on.

    Picked at random below the kernel's ephemeral range where there is one: a port the
    kernel gives out (to a server bound to port 0, or as an outgoing connection's local end)
    could be taken by another process between its choice here and its use, as a gRPC server
    of a test running alongside can take a broker's port. Else one the kernel gives."""
    low = _ephemeral_range_start()
    if low is not None and low > _LOWEST_PICKED_PORT:
        for _ in range(_PORT_TRIES):
            port = _PORT_RANDOM.randrange(_LOWEST_PICKED_PORT, low)
            if port not in _PICKED and port_is_free(port, host):
                _PICKED.add(port)
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        given: int = sock.getsockname()[1]
        return given


def _ephemeral_range_start() -> int | None:
    try:
        return int(_EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True

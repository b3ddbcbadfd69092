"""``connect-grpc ctl``: a kcctl-like command-line client of a running worker or cluster,
built on :class:`connect_grpc.client.ConnectClient` (click for the commands and shell
completion, rich for tables and live views)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connect_grpc.ctl.root import complete, run_ctl

#: What click's completion scripts set when they ask ``connect-grpc`` for completions. Here,
#: not in :mod:`.root`, so that ``connect-grpc`` can look for it without importing the ctl
#: (its client, gRPC, click and rich) when it runs a worker.
COMPLETE_VAR = "_CONNECT_GRPC_COMPLETE"

__all__ = ["COMPLETE_VAR", "complete", "run_ctl"]


def __getattr__(name: str) -> Any:
    # complete and run_ctl are imported from .root when first asked for (PEP 562): importing
    # a module of this package (e.g. .documents) must not import the whole command tree.
    if name in ("complete", "run_ctl"):
        from connect_grpc.ctl import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""``connect-grpc ctl``: a kcctl-like command-line client of a running worker or cluster,
built on :class:`connect_grpc.client.ConnectClient` (click for the commands and shell
completion, rich for tables and live views)."""

from connect_grpc.ctl.root import COMPLETE_VAR, complete, run_ctl

__all__ = ["COMPLETE_VAR", "complete", "run_ctl"]

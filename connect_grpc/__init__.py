"""connect-grpc: a Kafka Connect-style worker cluster with a gRPC control API."""

import os
import sys

# The worker starts child processes (the Spark JVM gateway, the local Kafka broker) while gRPC
# threads run; gRPC's fork handlers are for fork-without-exec and can kill such a child
# between fork and exec. Set before anything imports grpc.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

# `connect-grpc ctl` is a terminal program: gRPC's C core logs a failed TLS handshake (an
# untrusted certificate, a plaintext worker) at INFO on stderr, ahead of ctl's own error,
# which already gives the reason. Read once, when gRPC starts: so set here, and only for ctl.
if os.path.basename(sys.argv[0]) == "connect-grpc" and sys.argv[1:2] == ["ctl"]:
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

__version__ = "0.1.0"

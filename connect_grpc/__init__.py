"""connect-grpc: a Kafka Connect-style worker cluster with a gRPC control API."""

import os

# The worker starts child processes (the Spark JVM gateway, the local Kafka broker) while gRPC
# threads run; gRPC's fork handlers are for fork-without-exec and can kill such a child
# between fork and exec. Set before anything imports grpc.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

__version__ = "0.1.0"

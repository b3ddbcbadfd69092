"""connect-grpc: a Kafka Connect-style worker cluster with a gRPC control API."""

__version__ = "0.1.0"

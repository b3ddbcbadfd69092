"""Generated from proto/connect_grpc/host/v1 by scripts/gen_proto.sh; do not edit."""

"""Generated from proto/connect_grpc/host by scripts/gen_proto.sh; do not edit."""

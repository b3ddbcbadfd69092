#!/usr/bin/env bash
# Generates the Python protobuf/gRPC modules from proto/ into connect_grpc/v1/.
# The only way those files are made: never edit them by hand.
# `scripts/gen_proto.sh --check` fails if the committed files drift from proto/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=${PYTHON:-python}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$python" -m grpc_tools.protoc -I proto \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  proto/connect_grpc/v1/connect.proto
printf '"""Generated from proto/connect_grpc/v1 by scripts/gen_proto.sh; do not edit."""\n' \
  >"$out/connect_grpc/v1/__init__.py"
if [ "${1:-}" = "--check" ]; then
  if ! diff -r "$out/connect_grpc/v1" connect_grpc/v1 >/dev/null; then
    diff -r "$out/connect_grpc/v1" connect_grpc/v1 | head -40 >&2
    echo "generated code drifted from proto/: run scripts/gen_proto.sh" >&2
    exit 1
  fi
  echo "generated code matches proto/"
else
  rm -rf connect_grpc/v1
  cp -r "$out/connect_grpc/v1" connect_grpc/v1
  echo "generated connect_grpc/v1 from proto/"
fi

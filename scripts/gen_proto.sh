#!/usr/bin/env bash
# Generates the code built from proto/: the Python protobuf/gRPC modules of the API in
# connect_grpc/v1/ and of the task-host protocol in connect_grpc/host/ (grpc_tools), and the
# Go client's package in clients/go/connectv1/ from the API's proto only (buf, with the
# pinned protoc-gen-go and protoc-gen-go-grpc; `make proto` installs them). The only way those
# files are made: never edit them by hand. (jvm/'s Maven build generates the task-host
# protocol's Java classes from the same proto at build time; they are never committed.)
# `scripts/gen_proto.sh --check` fails if the committed files drift from proto/.
# Environment: PYTHON (with grpc_tools), BUF (the buf binary), GO_BIN (the absolute path of
# the directory holding protoc-gen-go and protoc-gen-go-grpc).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=${PYTHON:-python}
buf=${BUF:-.tools/node_modules/.bin/buf}
go_bin=${GO_BIN:-$root/.tools/go-bin}
for tool in "$buf" "$go_bin/protoc-gen-go" "$go_bin/protoc-gen-go-grpc"; do
  if [ ! -x "$tool" ]; then
    echo "$tool not found: run \`make proto\` (it installs buf and the Go plugins)" >&2
    exit 1
  fi
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$python" -m grpc_tools.protoc -I proto \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  proto/connect_grpc/v1/connect.proto
printf '"""Generated from proto/connect_grpc/v1 by scripts/gen_proto.sh; do not edit."""\n' \
  >"$out/connect_grpc/v1/__init__.py"
"$python" -m grpc_tools.protoc -I proto --python_out="$out" --pyi_out="$out" \
  proto/connect_grpc/host/v1/host.proto
printf '"""Generated from proto/connect_grpc/host by scripts/gen_proto.sh; do not edit."""\n' \
  >"$out/connect_grpc/host/__init__.py"
printf '"""Generated from proto/connect_grpc/host/v1 by scripts/gen_proto.sh; do not edit."""\n' \
  >"$out/connect_grpc/host/v1/__init__.py"
# buf finds local plugins on PATH, and Go's exec refuses relative PATH entries. The Go client
# is the API's: the task-host protocol is left out of it.
PATH="$go_bin:$PATH" "$buf" generate proto --template clients/go/buf.gen.yaml --output "$out/go" \
  --path proto/connect_grpc/v1

# generated directory, committed directory
generated=("$out/connect_grpc/v1" "$out/connect_grpc/host" "$out/go/connectv1")
committed=(connect_grpc/v1 connect_grpc/host clients/go/connectv1)
if [ "${1:-}" = "--check" ]; then
  drifted=0
  # the bytecode Python writes beside the committed modules (make pyc) is not generated code
  for i in "${!generated[@]}"; do
    if ! diff -r -x __pycache__ "${generated[$i]}" "${committed[$i]}" >/dev/null; then
      diff -r -x __pycache__ "${generated[$i]}" "${committed[$i]}" | head -40 >&2 || true
      echo "${committed[$i]} drifted from proto/: run \`make proto\`" >&2
      drifted=1
    fi
  done
  [ "$drifted" = 0 ] || exit 1
  echo "generated code matches proto/"
else
  for i in "${!generated[@]}"; do
    rm -rf "${committed[$i]}"
    cp -r "${generated[$i]}" "${committed[$i]}"
  done
  echo "generated ${committed[*]} from proto/"
fi

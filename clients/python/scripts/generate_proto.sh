#!/usr/bin/env bash
# Regenerates src/troupe_client/troupe_pb2.py (and its type stub .pyi) from messages/troupe.proto with
# the protoc on PATH (Debian's 3.21). Run after every change to the proto;
# tests/test_proto.py fails while the committed file is stale.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
protoc -I "$here/../../messages" --python_out="$here/src/troupe_client" --pyi_out="$here/src/troupe_client" troupe.proto
echo "wrote $here/src/troupe_client/troupe_pb2.py ($(protoc --version))"

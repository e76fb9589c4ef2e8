#!/usr/bin/env bash
# The main job: starts a local cluster (a head and N shard processes, CURVE
# between them), sends one chat prompt through it, prints the streamed answer,
# and stops the cluster.
#
#   scripts/run.sh ["prompt"] [--shards N] [--amateur-model PATH]   (default: 3 shards)
#
# --amateur-model loads PATH on the head and asks for contrastive decoding
# against it (default alpha/beta; see README).
set -euo pipefail
cd "$(dirname "$0")/.."
PROMPT=${1:-"Give me three tips for staying healthy."}
shift || true
SHARDS=3
UP_FLAGS=()
SUBMIT_FLAGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --shards) SHARDS=$2; shift 2 ;;
    --amateur-model) UP_FLAGS+=(--amateur-model "$2"); SUBMIT_FLAGS+=(--contrastive); shift 2 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
DIR=$(mktemp -d -t troupe-run-XXXXXX)
build/bin/troupe cluster up --shards "$SHARDS" --dir "$DIR" --base-port 0 ${UP_FLAGS[@]+"${UP_FLAGS[@]}"} \
  >"$DIR/cluster.out" 2>"$DIR/cluster.err" &
CLUSTER=$!
cleanup() { kill -TERM "$CLUSTER" 2>/dev/null || true; wait "$CLUSTER" 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
for _ in $(seq 1 900); do
  [ -s "$DIR/cluster.json" ] && break
  kill -0 "$CLUSTER" 2>/dev/null || { cat "$DIR/cluster.err" >&2; exit 1; }
  sleep 0.2
done
[ -s "$DIR/cluster.json" ] || { echo "run.sh: the cluster did not come up" >&2; cat "$DIR/cluster.err" >&2; exit 1; }
ENDPOINT=$(head -n 1 "$DIR/cluster.out")
echo "[troupe] cluster of 1 head + $SHARDS shards at $ENDPOINT; asking: $PROMPT" >&2
build/bin/troupe submit --endpoint "$ENDPOINT" --chat --prompt "$PROMPT" --max-tokens 128 ${SUBMIT_FLAGS[@]+"${SUBMIT_FLAGS[@]}"}

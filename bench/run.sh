#!/usr/bin/env bash
# Runs the speed benchmarks side by side with their peers and gathers the
# figures into bench/results/latest.json (ratios named like
# decode_vs_llama_cpp_ratio) and bench/results/latest.svg (aggregate tokens/s
# against concurrent sessions). Needs scripts/setup.sh --with-test-deps
# (llama-cpp-python).
#
#   bench/run.sh            # 5 alternated runs each (about 15 minutes on 2 cores; the first
#                           # run also writes the 4.5 GB 7B-shaped model to .deps/bench/)
#   bench/run.sh --smoke    # one short run each: do they still run? (results in a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
RUNS=5 TOKENS=128 SESSIONS="1 4 16" OUT=bench/results BIG="--runs 3 --max-tokens 32"
if [ "${1:-}" = "--smoke" ]; then
  RUNS=1 TOKENS=8 SESSIONS="1 2" OUT=$(mktemp -d) BIG="--layers 3 --runs 1 --max-tokens 8"
  trap 'rm -rf "$OUT"' EXIT
fi
$PY bench/bench_single.py --runs "$RUNS" --max-tokens "$TOKENS" --out "$OUT/single.json"
$PY bench/bench_single.py --runs "$RUNS" --max-tokens "$TOKENS" --prompt-tokens 512 --out "$OUT/single_512.json"
# shellcheck disable=SC2086
$PY bench/bench_cluster.py --runs "$RUNS" --max-tokens "$TOKENS" --sessions $SESSIONS --out "$OUT/cluster.json"
# shellcheck disable=SC2086
$PY bench/bench_big.py $BIG --out "$OUT/big.json"
# The second family, Gemma 3 270M (scripts/setup.sh --with-test-deps installs it):
# single process vs llama.cpp, and the ring vs the single process with the
# head's (LM head's) share of model time.
GEMMA=.deps/model-gemma3/gemma-3-270m-q4_k_m.gguf
if [ -f "$GEMMA" ]; then
  $PY bench/bench_single.py --runs "$RUNS" --max-tokens "$TOKENS" --model "$GEMMA" --out "$OUT/single_gemma3.json"
  $PY bench/bench_cluster.py --runs "$RUNS" --max-tokens "$TOKENS" --sessions 1 --no-peer --model "$GEMMA" \
    --out "$OUT/cluster_gemma3.json"
fi
# Petals lives in its own venv (5 GB of pinned torch 2.1 and hivemind): the
# full run makes it, the smoke run uses it only when it is there.
PETALS=.deps/petals-venv/bin/python
if [ "${1:-}" = "--smoke" ]; then
  if [ -x "$PETALS" ]; then
    $PETALS bench/bench_petals.py --runs 1 --max-tokens 8 --out "$OUT/petals.json"
  else
    echo "bench/run.sh --smoke: no $PETALS (bench/setup_peer_venv.sh makes it): Petals not run"
  fi
else
  [ -x "$PETALS" ] || bench/setup_peer_venv.sh
  $PETALS bench/bench_petals.py --runs 3 --max-tokens 64 --out "$OUT/petals.json"
fi
$PY bench/summarize.py "$OUT"
if [ "${1:-}" = "--smoke" ]; then
  test -s "$OUT/latest.json" && test -s "$OUT/latest.svg"
  echo "bench/run.sh --smoke: every benchmark ran"
fi

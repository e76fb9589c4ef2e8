#!/usr/bin/env bash
# Runs every test:
#   1. setup (dependencies, test references, build),
#   2. CTest: GoogleTest units, cross-process transport tests, the Python
#      reference tests (llama.cpp conformance, Hugging Face tokenizer, the
#      local cluster end to end),
#   3. the parsers and kernels again under AddressSanitizer + UBSan
#      (scripts/asan.sh, its own build folder),
#   4. every decoder of outside bytes under libFuzzer for a bounded time
#      (scripts/fuzz.sh: wire messages, model files, tokenizer.json, node
#      configs, HTTP request bodies; 7 targets, FUZZ_SECONDS each, default
#      20: under 2.5 minutes of fuzzing),
#   5. the lint: format and clang-tidy (scripts/lint.sh).
#
#   scripts/test.sh                 # everything
#   scripts/test.sh -L unit         # extra arguments go to ctest (and skip 3 to 5)
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time goes to stderr at the end (CI's budget is 45 minutes).
times=()
phase() {
  local name=$1 start=$SECONDS
  shift
  "$@" || status=1
  times+=("$name $((SECONDS - start)) s")
}
status=0
phase setup scripts/setup.sh --with-test-deps
[ $status -eq 0 ] || exit 1
phase ctest bash -c 'cd build && ctest --output-on-failure -j"$(nproc)" "$@"' ctest "$@"
if [ $# -eq 0 ]; then
  phase asan scripts/asan.sh
  phase fuzz env FUZZ_SECONDS="${FUZZ_SECONDS:-20}" scripts/fuzz.sh
  phase lint scripts/lint.sh
fi
echo "scripts/test.sh: $(IFS=,; echo "${times[*]}" | sed 's/,/, /g'); $SECONDS s in all" >&2
if [ $status -ne 0 ]; then
  echo "scripts/test.sh: some tests failed" >&2
fi
exit $status

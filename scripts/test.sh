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
scripts/setup.sh --with-test-deps
status=0
(cd build && ctest --output-on-failure -j"$(nproc)" "$@") || status=1
if [ $# -eq 0 ]; then
  scripts/asan.sh || status=1
  FUZZ_SECONDS=${FUZZ_SECONDS:-20} scripts/fuzz.sh || status=1
  scripts/lint.sh || status=1
fi
if [ $status -ne 0 ]; then
  echo "scripts/test.sh: some tests failed" >&2
fi
exit $status

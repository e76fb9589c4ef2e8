#!/usr/bin/env bash
# Builds every GoogleTest suite that needs no libtorch — parsers, kernels,
# text, sampling, scheduling, cluster configs, the wire, transport (cross-
# process links included), http and the Redis bridge's rules — with
# AddressSanitizer + UBSan in their own build folder (build-asan) and runs
# them. Any sanitizer report, leak or failing test makes the script exit
# non-zero. (The model and actor suites link libtorch, which is not built for
# the sanitizers; the Python tests drive the uninstrumented binary.)
#
#   scripts/asan.sh                           # format_test and the other non-torch suites
#   JOBS=1 scripts/asan.sh                    # build parallelism (default 2)
#   scripts/asan.sh --gtest_filter='Gguf*'    # extra arguments go to every test binary
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD="$ROOT/build-asan"
JOBS=${JOBS:-2}

LOG_TAG=asan
. scripts/lib.sh

# format_test is required; the others run when their suites exist.
REQUIRED=(format_test)
OPTIONAL=(quant_test text_test sampling_test core_test cluster_test scheduling_test broker_test messages_test
  http_test transport_test wire_process_test)

log "configuring $BUILD"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DTROUPE_ASAN=ON -DTROUPE_WITH_TORCH=OFF >/dev/null

available=$(ninja -C "$BUILD" -t targets all | sed -n 's/^\([A-Za-z0-9_]*_test\): .*/\1/p')
targets=("${REQUIRED[@]}")
for t in "${OPTIONAL[@]}"; do
  if grep -qx "$t" <<<"$available"; then targets+=("$t"); else log "skipping $t (no tests yet)"; fi
done
for t in "${REQUIRED[@]}"; do
  grep -qx "$t" <<<"$available" || { log "$t is not a target of $BUILD"; exit 1; }
done

# The cross-process transport tests start this helper binary.
helpers=()
grep -qx transport_peer <<<"$(ninja -C "$BUILD" -t targets all | sed -n 's/^\([A-Za-z0-9_]*\): .*/\1/p')" &&
  helpers+=(transport_peer)
log "building ${targets[*]} ${helpers[*]} (-j$JOBS)"
ninja -C "$BUILD" -j"$JOBS" "${targets[@]}" "${helpers[@]}"

# detect_stack_use_after_return is off: with gcc 12 it crashes inside ASan's fake stack
# when a large test body copies a std::initializer_list (text_test, SmolLm2
# tokenizer ids); every other check stays on.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
failed=()
for t in "${targets[@]}"; do
  log "running $t"
  if ! "$BUILD/bin/$t" --gtest_brief=1 "$@"; then failed+=("$t"); fi
done

if ((${#failed[@]})); then
  log "FAILED: ${failed[*]}"
  exit 1
fi
log "all passed: ${targets[*]}"

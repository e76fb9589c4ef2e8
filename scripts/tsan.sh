#!/usr/bin/env bash
# Builds the threaded suites without libtorch — transport (the poll loop,
# outboxes, links, the ZAP handler, cross-process links) and http (the server,
# its connection pool, key reloads) — with ThreadSanitizer in their own build
# folder (build-tsan) and runs them. A data race or a failing test makes the
# script exit non-zero.
#
# Not covered: actors_test and the node binary link libtorch and run the
# kernels' OpenMP teams, and neither libtorch nor Debian's libgomp is built
# for ThreadSanitizer, which then reports races it cannot see the
# synchronization of. libzmq is not instrumented either: what crosses a
# ZeroMQ socket between threads is ordered by its own atomics, hence
# tests/tsan.supp names libzmq's internals (and nothing of ours).
#
#   scripts/tsan.sh                           # transport_test and http_test
#   JOBS=1 scripts/tsan.sh                    # build parallelism (default 2)
#   scripts/tsan.sh --gtest_filter='Poll*'    # extra arguments go to every test binary
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD="$ROOT/build-tsan"
JOBS=${JOBS:-2}

LOG_TAG=tsan
. scripts/lib.sh

TARGETS=(transport_test http_test)
log "configuring $BUILD"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DTROUPE_TSAN=ON -DTROUPE_WITH_TORCH=OFF >/dev/null
log "building ${TARGETS[*]} transport_peer (-j$JOBS)"
ninja -C "$BUILD" -j"$JOBS" "${TARGETS[@]}" transport_peer

export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/tsan.supp"
# The CrossProcess and CurveProcess tests move 10,000 steps between
# processes against deadlines that TSan's 5-15x slowdown breaks; they are
# about processes, not threads, and run under AddressSanitizer
# (scripts/asan.sh).
declare -A FILTER=([transport_test]="-CrossProcess.*:CurveProcess.*")
failed=()
for t in "${TARGETS[@]}"; do
  log "running $t"
  if ! "$BUILD/bin/$t" --gtest_brief=1 --gtest_filter="${FILTER[$t]:-*}" "$@"; then failed+=("$t"); fi
done

if ((${#failed[@]})); then
  log "FAILED: ${failed[*]}"
  exit 1
fi
log "all passed: ${TARGETS[*]}"

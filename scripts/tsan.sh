#!/usr/bin/env bash
# Runs the threaded suites under ThreadSanitizer, each build in its own
# folder. A data race or a failing test makes the script exit non-zero.
#   transport_test, http_test   (build-tsan, no libtorch) the poll loop,
#                               outboxes, links, the ZAP handler; the HTTP
#                               server, its connection pool, key reloads
#   actors_test                 (build-tsan-actors) the CAF actors of a node
#                               — scheduler, embedding, shards, LM head,
#                               sampler — running the model in one process
#
# The actors need a CAF built with the sanitizer: Debian's libcaf-core hands
# an actor from one worker thread to the next through atomics TSan cannot
# see, so every actor's own state looked raced (1,625 reports in one run).
# The script builds the same CAF, Debian's upstream tarball of 0.17.6
# (checked by its SHA-256), with -fsanitize=thread into .deps/caf-tsan once
# (about a minute) and links actors_test to it. libtorch is not instrumented
# either; the suite runs with one OpenMP thread, so torch's own thread pools
# stay idle and the threads are CAF's and ours.
#
# libzmq, libsodium and libtorch are not built for the sanitizer: what they
# hand between threads is ordered by their own atomics, hence
# tests/tsan.supp names their internals (and nothing of ours).
#
#   scripts/tsan.sh                           # all three suites
#   scripts/tsan.sh transport http            # some, by name
#   JOBS=1 scripts/tsan.sh                    # build parallelism (default 2)
#   TSAN_ARGS=--gtest_filter='Poll*' scripts/tsan.sh transport   # arguments for the test binaries
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD="$ROOT/build-tsan"
JOBS=${JOBS:-2}

LOG_TAG=tsan
. scripts/lib.sh

SUITES=("$@")
[ ${#SUITES[@]} -eq 0 ] && SUITES=(transport http actors)
read -r -a EXTRA <<<"${TSAN_ARGS:-}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/tsan.supp"
failed=()

# The CrossProcess and CurveProcess tests move 10,000 steps between
# processes against deadlines that TSan's 5-15x slowdown breaks; they are
# about processes, not threads, and run under AddressSanitizer
# (scripts/asan.sh).
declare -A FILTER=([transport_test]="-CrossProcess.*:CurveProcess.*")
run_suite() {
  local bin=$1
  log "running $(basename "$bin")"
  if ! "$bin" --gtest_brief=1 --gtest_filter="${FILTER[$(basename "$bin")]:-*}" "${EXTRA[@]}"; then
    failed+=("$(basename "$bin")")
  fi
}

plain=()
for s in "${SUITES[@]}"; do
  case "$s" in
    transport | http) plain+=("${s}_test") ;;
    actors) ;;
    *) log "no suite '$s' (transport, http, actors)"; exit 2 ;;
  esac
done
if ((${#plain[@]})); then
  log "configuring $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DTROUPE_TSAN=ON -DTROUPE_WITH_TORCH=OFF >/dev/null
  log "building ${plain[*]} transport_peer (-j$JOBS)"
  ninja -C "$BUILD" -j"$JOBS" "${plain[@]}" transport_peer
  for t in "${plain[@]}"; do run_suite "$BUILD/bin/$t"; done
fi

if [[ " ${SUITES[*]} " == *" actors "* ]]; then
  CAF_VERSION=0.17.6
  CAF_SHA256=e2bf5bd243f08bb7d8adde197cfe3e6d71314ed3378fe0692f8932f4c3b3928c
  CAF="$ROOT/.deps/caf-tsan"
  if [ ! -f "$CAF/lib/libcaf_core.so" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    tarball="actor-framework_$CAF_VERSION.orig.tar.gz"
    log "building CAF $CAF_VERSION with ThreadSanitizer into $CAF (Debian's $tarball)"
    curl -fsSL -o "$work/$tarball" "http://deb.debian.org/debian/pool/main/a/actor-framework/$tarball"
    echo "$CAF_SHA256  $work/$tarball" | sha256sum -c --quiet
    tar xzf "$work/$tarball" -C "$work"
    cmake -S "$work/actor-framework-$CAF_VERSION" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
      -DCAF_NO_IO=yes -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_OPENCL=yes \
      -DCAF_NO_PYTHON=yes -DCAF_NO_TOOLS=yes -DCAF_NO_COMPILER_CHECK=yes -DCMAKE_INSTALL_PREFIX="$CAF" >/dev/null
    ninja -C "$work/build" -j"$JOBS" install >/dev/null
  fi
  ABUILD="$ROOT/build-tsan-actors"
  log "configuring $ABUILD (libtorch, CAF from $CAF)"
  cmake -S "$ROOT" -B "$ABUILD" -G Ninja -DTROUPE_TSAN=ON -DTROUPE_WITH_TORCH=ON -DCAF_INCLUDE_DIR="$CAF/include" \
    -DCAF_CORE_LIBRARY="$CAF/lib/libcaf_core.so" >/dev/null
  log "building actors_test (-j$JOBS)"
  ninja -C "$ABUILD" -j"$JOBS" actors_test
  OMP_NUM_THREADS=1 run_suite "$ABUILD/bin/actors_test"
fi

if ((${#failed[@]})); then
  log "FAILED: ${failed[*]}"
  exit 1
fi
log "all passed: ${SUITES[*]}"

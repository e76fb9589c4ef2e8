#!/usr/bin/env bash
# Fuzzes every decoder of outside bytes (libFuzzer + ASan + UBSan; the
# targets are listed in tests/fuzz/CMakeLists.txt) for a bounded time each, in
# their own build folder (build-fuzz, clang, no libtorch):
#   envelope, tensor     wire messages and tensor frames
#   gguf, safetensors    model files
#   tokenizer_json       Hugging Face tokenizer folders
#   node_config          node config YAML and `troupe config check`
#   chat_request         the HTTP API's request bodies
# Installs clang and its fuzzer runtime when missing. Exits non-zero when a
# target crashes or trips a property; the crashing input is copied into
# tests/fuzz/regressions/<target>/, where the *_fuzz_replay CTest tests replay
# it on every build from then on. Inputs are at most 64 KiB; one of them
# allocating 512 MB at once, or running 10 s, is a failure too. A target with
# tests/fuzz/dict/<target>.dict is given it (libFuzzer -dict: the keys and
# keywords of its format).
#
#   scripts/fuzz.sh                    # 60 s per target
#   FUZZ_SECONDS=600 scripts/fuzz.sh   # longer
#   scripts/fuzz.sh gguf tensor        # some targets, by name
#   JOBS=1 scripts/fuzz.sh             # build parallelism (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD="$ROOT/build-fuzz"
SECONDS_EACH=${FUZZ_SECONDS:-60}
JOBS=${JOBS:-2}
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(envelope tensor gguf safetensors tokenizer_json node_config chat_request)

LOG_TAG=fuzz
. scripts/lib.sh

# clang 14 (Debian 12): libFuzzer and the sanitizer runtimes are in
# libclang-rt-14-dev; the root CMakeLists needs OpenMP, which clang takes from
# libomp-14-dev.
APT_PACKAGES=(clang libclang-rt-14-dev libomp-14-dev)
apt_install "${APT_PACKAGES[@]}"

log "configuring $BUILD (clang, TROUPE_FUZZ=ON, no torch)"
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTROUPE_FUZZ=ON -DTROUPE_WITH_TORCH=OFF >/dev/null

build_targets=()
for t in "${TARGETS[@]}"; do build_targets+=("${t}_fuzz" "${t}_fuzz_replay"); done
log "building ${build_targets[*]} (-j$JOBS)"
ninja -C "$BUILD" -j"$JOBS" "${build_targets[@]}"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
failed=()
for t in "${TARGETS[@]}"; do
  seeds="$ROOT/tests/fuzz/corpus/$t"
  regressions="$ROOT/tests/fuzz/regressions/$t"
  work="$BUILD/fuzz-work/$t"
  mkdir -p "$work/corpus" "$work/artifacts"
  rm -f "$work/artifacts"/*

  log "$t: replaying seeds and regressions"
  if ! "$BUILD/bin/${t}_fuzz_replay" "$seeds" "$regressions" 2>"$work/replay.log"; then
    tail -20 "$work/replay.log" >&2
    failed+=("$t(replay)")
    continue
  fi

  log "$t: fuzzing for ${SECONDS_EACH}s"
  dict=()
  [ -f "$ROOT/tests/fuzz/dict/$t.dict" ] && dict=(-dict="$ROOT/tests/fuzz/dict/$t.dict")
  # New inputs go to the work corpus; the seeds in the tree stay as written.
  if "$BUILD/bin/${t}_fuzz" "$work/corpus" "$seeds" "$regressions" "${dict[@]}" \
       -max_total_time="$SECONDS_EACH" -max_len=65536 -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 \
       -print_final_stats=1 -artifact_prefix="$work/artifacts/" 2>"$work/fuzz.log"; then
    grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" \
      "$work/fuzz.log" | sed "s/^/[$t] /" >&2 || true
  else
    tail -40 "$work/fuzz.log" >&2
    failed+=("$t")
  fi
  for crash in "$work/artifacts"/*; do
    [ -e "$crash" ] || continue
    name="$(basename "$crash")"
    cp "$crash" "$regressions/$name"
    log "$t: saved $name as a regression test (tests/fuzz/regressions/$t/)"
  done
done

if ((${#failed[@]})); then
  log "FAILED: ${failed[*]} (logs in $BUILD/fuzz-work/)"
  exit 1
fi
log "no crashes: ${TARGETS[*]} (${SECONDS_EACH}s each)"

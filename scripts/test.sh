#!/usr/bin/env bash
# Runs every test: setup (deps + build), then CTest — GoogleTest units, the
# Python reference tests (llama.cpp conformance, Hugging Face tokenizer), and
# the AddressSanitizer run of the file/format parsers.
#
#   scripts/test.sh              # everything
#   scripts/test.sh -L unit      # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --with-test-deps
cd build
ctest --output-on-failure -j"$(nproc)" "$@"

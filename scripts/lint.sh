#!/usr/bin/env bash
# Checks the C++ sources: clang-format (.clang-format) on every tracked file,
# and clang-tidy (.clang-tidy) on the given files or, by default, on the
# libraries that build without libtorch and CAF (fast; the compile database
# comes from build/, made by scripts/setup.sh). Installs clang-format and
# clang-tidy from Debian when missing.
#
#   scripts/lint.sh                  # format check + tidy on the default set
#   scripts/lint.sh --fix            # rewrite files in the project's format
#   scripts/lint.sh FILE.cpp...      # format check + tidy on these files
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_TAG=lint
. scripts/lib.sh
apt_install clang-format clang-tidy

mapfile -t sources < <(git ls-files '*.cpp' '*.h')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${sources[@]}"
  exit 0
fi
status=0
log "clang-format: ${#sources[@]} files"
clang-format --dry-run --Werror "${sources[@]}" || status=1

if [ $# -gt 0 ]; then
  tidy=("$@")
else
  mapfile -t tidy < <(git ls-files 'client/*.cpp' 'scheduling/*.cpp' 'cluster/*.cpp' 'http/*.cpp' 'transport/*.cpp' \
                        'messages/envelope_codec.cpp' 'messages/message_codec.cpp' 'messages/wire_error.cpp' \
                        'pipeline/sampling/*.cpp' 'pipeline/text/*.cpp')
fi
[ -f build/compile_commands.json ] || { log "no build/compile_commands.json: run scripts/setup.sh first"; exit 1; }
log "clang-tidy: ${#tidy[@]} files"
printf '%s\n' "${tidy[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p build --quiet 2>/dev/null || status=1
[ $status -eq 0 ] && log "clean" || log "findings above"
exit $status

#!/usr/bin/env bash
# Creates .deps/petals-venv: Petals 2.2.0.post1 and the versions it pins, for
# bench/bench_petals.py (and torch + transformers + gguf for its Hugging Face
# fallback). Kept apart from .venv, whose transformers 5 the tests need.
#
#   bench/setup_peer_venv.sh [VENV]      # default .deps/petals-venv
#
# Everything comes from PyPI. hivemind 1.1.10.post2 (Petals' pin) is an sdist
# whose setup.py downloads its p2pd daemon from GitHub releases, which this
# machine cannot reach; hivemind 1.1.12's PyPI wheel ships a p2pd binary built
# from the same control protocol (identical p2pd.proto), so this script puts
# that binary into the 1.1.10.post2 sources and records its sha256 in place of
# the release's, and setup.py then finds it and downloads nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-$ROOT/.deps/petals-venv}"
PY="${PYTHON:-python3}"

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP=("$VENV/bin/pip" install --disable-pip-version-check -q)
CONSTRAINTS="$(mktemp)"
WORK="$(mktemp -d)"
trap 'rm -rf "$CONSTRAINTS" "$WORK"' EXIT
# Versions from Petals 2.2.0.post1's own pins (transformers <4.35, pydantic <2,
# hivemind 1.1.10.post2, peft 0.5.0, tensor_parallel 1.0.23, bitsandbytes 0.41.1)
# and the releases of late 2023 that go with them. multiaddr must stay at 0.0.9:
# 0.2.0 writes /unix/tmp/x.sock as the relative path tmp/x.sock, so every
# streaming call (rpc_inference) fails with 'Connection lost' (the daemon logs
# 'error dialing handler: dial unix tmp/hivemind-p2pclient-....sock').
cat > "$CONSTRAINTS" <<'EOF'
setuptools<70
torch==2.1.2
transformers==4.34.1
tokenizers==0.14.1
huggingface-hub==0.17.3
accelerate==0.25.0
peft==0.5.0
tensor_parallel==1.0.23
bitsandbytes==0.41.1
pydantic==1.10.13
numpy==1.26.4
protobuf==4.25.3
grpcio==1.62.3
grpcio-tools==1.62.3
multiaddr==0.0.9
safetensors==0.4.1
gguf==0.19.0
EOF
"${PIP[@]}" -c "$CONSTRAINTS" setuptools wheel grpcio-tools
"${PIP[@]}" -c "$CONSTRAINTS" torch numpy

if ! "$VENV/bin/python" -c "import hivemind" 2>/dev/null; then
  GET=("$VENV/bin/pip" download --disable-pip-version-check -q --no-deps -d "$WORK")
  "${GET[@]}" --no-build-isolation hivemind==1.1.10.post2
  "${GET[@]}" --only-binary :all: hivemind==1.1.12    # x86_64 Linux: the p2pd it ships is built for that
  tar -C "$WORK" -xzf "$WORK"/hivemind-1.1.10.post2.tar.gz
  SRC="$WORK/hivemind-1.1.10.post2"
  "$VENV/bin/python" - "$WORK"/hivemind-1.1.12-*.whl "$SRC/hivemind/hivemind_cli/p2pd" <<'EOF'
import sys, zipfile, shutil, os
with zipfile.ZipFile(sys.argv[1]) as z, z.open("hivemind/hivemind_cli/p2pd") as f, open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(f, out)
os.chmod(sys.argv[2], 0o755)
EOF
  SUM="$(sha256sum "$SRC/hivemind/hivemind_cli/p2pd" | cut -d' ' -f1)"
  sed -i "s/\"p2pd-linux-amd64\": \"[0-9a-f]*\"/\"p2pd-linux-amd64\": \"$SUM\"/" "$SRC/setup.py"
  "${PIP[@]}" -c "$CONSTRAINTS" --no-build-isolation "$SRC"
fi
"${PIP[@]}" -c "$CONSTRAINTS" petals==2.2.0.post1 transformers gguf safetensors multiaddr
"$VENV/bin/python" -c "import torch, transformers, hivemind, petals
print('petals', petals.__version__, 'hivemind', hivemind.__version__, 'torch', torch.__version__,
      'transformers', transformers.__version__)"

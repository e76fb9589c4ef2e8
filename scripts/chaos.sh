#!/usr/bin/env bash
# Load and chaos, the long runs (issue 14, items 1 and 2): tests/python/load_chaos.py
# against head + 3 shards x 2 replicas, first under load alone (RSS growth
# after warm-up must stay within 5 %), then with shards SIGKILLed and started
# again, SIGSTOPped, and the head restarted. Reports land in bench/results/.
# Exits non-zero on any lost or wrong job (or RSS growth past the bound).
#
#   scripts/chaos.sh                      # 10 minutes each, 256+ jobs, 32 at a time
#   MINUTES=2 scripts/chaos.sh            # shorter
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${MINUTES:-10}
OUT=bench/results
mkdir -p "$OUT"
status=0
.venv/bin/python tests/python/load_chaos.py --minutes "$MINUTES" --jobs 256 --concurrency 32 \
  --out "$OUT/load.json" || status=1
.venv/bin/python tests/python/load_chaos.py --minutes "$MINUTES" --jobs 256 --concurrency 32 --chaos \
  --kill-every 30 --stop-for 15 --out "$OUT/chaos.json" || status=1
exit $status

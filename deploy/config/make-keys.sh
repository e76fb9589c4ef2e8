#!/bin/sh
# The init step of a Troupe deployment: one CURVE key pair per node and one
# for job clients, the node allowlist (the head's and every shard's .pub —
# the head dials shards, shards dial the head and each other), the client
# allowlist, and an HTTP API key. Keys that exist are kept, so it can run
# before every start.
#
#   TROUPE_KEYS=/var/lib/troupe/keys TROUPE_NODES="head shard-0 shard-1 shard-2" make-keys.sh
set -eu
K=${TROUPE_KEYS:-/var/lib/troupe/keys}
NODES=${TROUPE_NODES:-head shard-0 shard-1 shard-2}
TROUPE=${TROUPE_BIN:-troupe}
umask 077
for n in $NODES client; do
  [ -f "$K/$n/node.key" ] || "$TROUPE" keys generate --out "$K/$n" >/dev/null
done
mkdir -p "$K/allowlist" "$K/clients"
for n in $NODES; do cp "$K/$n/node.pub" "$K/allowlist/$n.pub"; done
cp "$K/client/node.pub" "$K/clients/client.pub"
chmod 0755 "$K" "$K/allowlist" "$K/clients" && chmod 0644 "$K"/allowlist/*.pub "$K"/clients/*.pub "$K"/*/node.pub
if [ ! -f "$K/api_keys.txt" ]; then
  key=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
  echo "operator sk-$key role=admin" > "$K/api_keys.txt"
fi
echo "keys in $K: $NODES client; allowlist: $(ls "$K/allowlist" | tr '\n' ' ')"

#!/usr/bin/env bash
# Builds deploy/Dockerfile into a local image without any container registry:
# the bookworm base comes from debootstrap (deb.debian.org), imported as
# docker.io/library/debian:bookworm so the Dockerfile's FROM resolves
# locally, then buildah builds (podman works alike: TROUPE_IMAGE_TOOL=podman).
#
#   deploy/build-image.sh                  # localhost/troupe:dev, model baked in
#   MODEL=mount deploy/build-image.sh      # no model in the image (mount /models)
#
# Needs root (debootstrap, buildah's storage) and the Debian packages
# buildah and debootstrap. About 50 minutes on 2 cores: the build stage runs
# scripts/setup.sh, which compiles Troupe and its tests.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOL=${TROUPE_IMAGE_TOOL:-buildah}
BASE=docker.io/library/debian:bookworm
BASE_ROOT=${TROUPE_BASE_ROOT:-/var/tmp/troupe-bookworm-root}
IMAGE=${TROUPE_IMAGE:-localhost/troupe:dev}
ISOLATION=${TROUPE_ISOLATION:-chroot}  # what works where runc cannot nest
log() { printf '[build-image] %s\n' "$*" >&2; }

for tool in "$TOOL" debootstrap; do
  command -v "$tool" >/dev/null || { log "missing $tool: apt-get install buildah debootstrap"; exit 1; }
done

if ! "$TOOL" image exists "$BASE" 2>/dev/null; then
  if [ ! -x "$BASE_ROOT/bin/sh" ]; then
    log "debootstrap bookworm into $BASE_ROOT"
    debootstrap --variant=minbase bookworm "$BASE_ROOT" http://deb.debian.org/debian >&2
  fi
  log "importing $BASE_ROOT as $BASE"
  tarball="$BASE_ROOT.tar"
  tar -C "$BASE_ROOT" --exclude='./proc/*' --exclude='./sys/*' --exclude='./dev/*' -cf "$tarball" .
  ctr=$(buildah from scratch)
  buildah add "$ctr" "$tarball" / >/dev/null  # a local tar archive is unpacked
  buildah config --cmd /bin/bash "$ctr"
  buildah commit --rm "$ctr" "$BASE" >/dev/null
  rm -f "$tarball"
fi

log "building $IMAGE (MODEL=${MODEL:-bake}, isolation $ISOLATION)"
"$TOOL" build --layers --pull=never --isolation "$ISOLATION" -f deploy/Dockerfile \
  --build-arg MODEL="${MODEL:-bake}" -t "$IMAGE" .
log "done: $IMAGE"

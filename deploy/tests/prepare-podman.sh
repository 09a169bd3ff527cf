#!/usr/bin/env bash
# What the container test needs on a machine that can pull no base image: podman (installed with
# apt when missing), its configuration, and a Debian bookworm base made with debootstrap from
# Debian's own archive and imported into podman. Idempotent: a warm run only checks.
# Needs root. The image the test builds starts FROM this base (the Dockerfile's BASE argument).
set -euo pipefail

cache=${CORTADEL_CONTAINER_CACHE:?the cache folder (the Makefile sets it)}
base=${CORTADEL_CONTAINER_BASE:?the base image tag (the Makefile sets it)}
mkdir -p "$cache"

if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v debootstrap >/dev/null; then
  echo "installing podman, runc and debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq podman runc debootstrap >/dev/null || {
    apt-get update -qq && apt-get install -y -qq podman runc debootstrap >/dev/null
  }
fi

# runc (crun is not usable here) and file limits a container may raise to.
conf="$cache/containers.conf"
cat > "$conf.partial" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
CONF
mv "$conf.partial" "$conf"
export CONTAINERS_CONF="$conf"

if ! podman image exists "$base"; then
  tarball="$cache/bookworm-minbase.tar"
  if [ ! -f "$tarball" ]; then
    echo "making a Debian bookworm base with debootstrap (once)"
    rootfs="$cache/rootfs.partial"
    rm -rf "$rootfs"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
      bookworm "$rootfs" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 \
      || { tail -20 "$cache/debootstrap.log"; exit 1; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -cf "$tarball.partial" .
    mv "$tarball.partial" "$tarball"
    rm -rf "$rootfs"
  fi
  podman import --quiet "$tarball" "$base" >/dev/null
fi
# podman-compose runs the compose files (deploy/tests/test_compose.py); podman 4.3 has no `podman compose`.
compose_venv="$cache/podman-compose"
if [ ! -x "$compose_venv/bin/podman-compose" ]; then
  python3 -m venv "$compose_venv"
  "$compose_venv/bin/pip" install --quiet --disable-pip-version-check podman-compose==1.2.0 python-dotenv==1.2.4 PyYAML==6.0.4
fi
echo "podman $(podman version --format '{{.Client.Version}}'), base $base ready"

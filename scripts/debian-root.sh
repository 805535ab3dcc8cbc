#!/usr/bin/env bash
# A real Debian root for the SSH install tests and benchmarks, cached per version outside the tree:
#
#   ~/.cache/bpa-functions/debian-root-<suite>-<hash>/
#     rootfs/         mmdebstrap --variant=apt: essential packages + apt, nothing else
#       srv/bpa-apt/  a local apt repository (Packages index + .deb files), the root's only source
#     ready           written last: a cache without it is rebuilt
#
# The tests never reach the internet: the root's only apt source is `file:/srv/bpa-apt`, made here from
# .deb files that the ordinary client fetched at prereq time (`apt-get download`), plus bpa-test-slow,
# a package built here with dpkg-deb whose maintainer scripts can be told to sleep, so that a test
# can kill dpkg in the middle of an install at a known point.
#
# Prints the cache directory on stdout; progress goes to stderr. Needs root, mmdebstrap and dpkg-dev
# (scripts/prereqs.sh installs them).
set -euo pipefail

suite=${BPA_DEBIAN_SUITE:-bookworm}
# The machine's own apt sources (a file mmdebstrap pastes into the root's sources.list), so the
# root comes from the same Debian archive as every other package here; BPA_DEBIAN_MIRROR overrides.
mirror=${BPA_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  for candidate in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [ -s "$candidate" ] && { mirror=$candidate; break; }
  done
fi
[ -n "$mirror" ] || { echo "[debian-root] no apt sources on this machine: set BPA_DEBIAN_MIRROR" >&2; exit 1; }
# Small packages whose only dependency (libc6) is in every root: what the tests install for real.
packages=(hello tree)

script_hash=$(
  {
    cat "$0"
    echo "$suite ${packages[*]}"
    [ -f "$mirror" ] && cat "$mirror" || echo "$mirror"
  } | sha256sum | cut -c1-12
)
cache=${BPA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bpa-functions}/debian-root-$suite-$script_hash
if [ -f "$cache/ready" ]; then
  echo "$cache"
  exit 0
fi

log() { echo "[debian-root] $*" >&2; }
[ "$(id -u)" = 0 ] || { log "needs root (mmdebstrap --mode=root, device nodes)"; exit 1; }
command -v mmdebstrap >/dev/null || { log "mmdebstrap is missing (apt-get install mmdebstrap)"; exit 1; }
command -v dpkg-scanpackages >/dev/null || { log "dpkg-scanpackages is missing (apt-get install dpkg-dev)"; exit 1; }

# Older versions of this root (another hash) are of no further use.
rm -rf "${cache%-*}"-*
mkdir -p "$cache"
# sshd's ChrootDirectory wants every component root-owned and not group/world-writable.
chmod 0755 "$cache"
build=$(mktemp -d "$cache.build.XXXXXX")
trap 'rm -rf "$build"' EXIT

log "building a $suite root with mmdebstrap (first time on this machine: a minute or two)"
start=$(date +%s)
mmdebstrap --variant=apt --mode=root --quiet "$suite" "$build/rootfs" "$mirror" >&2

repo=$build/rootfs/srv/bpa-apt
mkdir -p "$repo"
log "fetching ${packages[*]} with apt-get download"
if ! (cd "$repo" && apt-get download -q "${packages[@]}" >&2); then
  apt-get update -qq >&2
  (cd "$repo" && apt-get download -q "${packages[@]}" >&2)
fi

log "building bpa-test-slow with dpkg-deb"
slow=$build/bpa-test-slow
mkdir -p "$slow/DEBIAN" "$slow/usr/share/bpa-test-slow"
cat >"$slow/DEBIAN/control" <<'EOF'
Package: bpa-test-slow
Version: 1.0
Architecture: all
Maintainer: bpa-functions tests <bpa-functions@localhost>
Section: misc
Priority: optional
Description: test package whose maintainer scripts can be told to sleep
 preinst sleeps for the seconds in /etc/bpa-test-slow/preinst-seconds and postinst for those in
 /etc/bpa-test-slow/postinst-seconds, when those files exist; postinst fails when
 /etc/bpa-test-slow/postinst-fails exists. Tests kill dpkg while it sleeps.
EOF
for phase in preinst postinst; do
  cat >"$slow/DEBIAN/$phase" <<EOF
#!/bin/sh
set -e
if [ -r /etc/bpa-test-slow/$phase-seconds ]; then
  echo "bpa-test-slow $phase: sleeping" >&2
  sleep "\$(cat /etc/bpa-test-slow/$phase-seconds)"
fi
if [ "$phase" = postinst ] && [ -e /etc/bpa-test-slow/postinst-fails ]; then
  echo "bpa-test-slow postinst: failing as /etc/bpa-test-slow/postinst-fails asks" >&2
  exit 1
fi
exit 0
EOF
  chmod 0755 "$slow/DEBIAN/$phase"
done
echo "installed by the bpa-functions tests" >"$slow/usr/share/bpa-test-slow/README"
dpkg-deb --root-owner-group --build "$slow" "$repo/bpa-test-slow_1.0_all.deb" >&2

(cd "$repo" && dpkg-scanpackages --multiversion . /dev/null 2>/dev/null >Packages && gzip -9kn Packages)

# The local repository is the root's only source: nothing inside reaches the network.
rm -f "$build/rootfs/etc/apt/sources.list" "$build/rootfs/etc/apt/sources.list.d/"*
echo 'deb [trusted=yes] file:/srv/bpa-apt ./' >"$build/rootfs/etc/apt/sources.list.d/bpa-local.list"
rm -rf "$build/rootfs/var/lib/apt/lists/"* "$build/rootfs/var/cache/apt/"*.bin
mkdir -p "$build/rootfs/var/lib/apt/lists/partial"

mv "$build/rootfs" "$cache/rootfs"
chmod 0755 "$cache/rootfs"
date -u +%FT%TZ >"$cache/ready"
log "ready in $(($(date +%s) - start)) s: $cache"
echo "$cache"

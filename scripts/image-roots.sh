#!/usr/bin/env bash
# The Debian roots the project's images are made of (local/images/), cached per version outside the tree:
#
#   ~/.cache/bpa-functions/image-root-<variant>-<suite>-<hash>/
#     rootfs/   mmdebstrap --variant=minbase, plus the variant's packages; no docs, man pages,
#               locales, logs or apt lists (what makes a root differ from one build to the next)
#     ready     written last: a cache without it is rebuilt
#
#   variant base   minbase alone: libc, libstdc++ (what Node.js needs) and a shell; the functions'
#                  images (with Node.js) and the cleanup Job's image
#   variant kud    minbase + ansible-core, python3, openssh-client: the KUD installer stand-in
#
# SOURCE_DATE_EPOCH is fixed, so the packages' own timestamps do not follow the clock; the image
# writer fixes every mtime and owner again. Prints the cache directory on stdout; progress goes to
# stderr. Needs root and mmdebstrap (scripts/prereqs.sh installs it).
#   bash scripts/image-roots.sh base|kud
set -euo pipefail

variant=${1:?usage: image-roots.sh base|kud}
suite=${BPA_DEBIAN_SUITE:-bookworm}
case $variant in
  base) packages=() ;;
  kud) packages=(ansible-core python3 openssh-client) ;;
  *) echo "[image-roots] unknown variant $variant (base or kud)" >&2; exit 2 ;;
esac
# The machine's own apt sources, as scripts/debian-root.sh does; BPA_DEBIAN_MIRROR overrides.
mirror=${BPA_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  for candidate in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [ -s "$candidate" ] && { mirror=$candidate; break; }
  done
fi
[ -n "$mirror" ] || { echo "[image-roots] no apt sources on this machine: set BPA_DEBIAN_MIRROR" >&2; exit 1; }

script_hash=$(
  {
    cat "$0"
    echo "$variant $suite ${packages[*]}"
    [ -f "$mirror" ] && cat "$mirror" || echo "$mirror"
  } | sha256sum | cut -c1-12
)
cache=${BPA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bpa-functions}/image-root-$variant-$suite-$script_hash
if [ -f "$cache/ready" ]; then
  echo "$cache"
  exit 0
fi

log() { echo "[image-roots] $*" >&2; }
[ "$(id -u)" = 0 ] || { log "needs root (mmdebstrap --mode=root)"; exit 1; }
command -v mmdebstrap >/dev/null || { log "mmdebstrap is missing (apt-get install mmdebstrap)"; exit 1; }

rm -rf "${cache%-*}"-*
mkdir -p "$cache"
build=$(mktemp -d "$cache.build.XXXXXX")
trap 'rm -rf "$build"' EXIT

log "building the $variant root ($suite minbase ${packages[*]}) with mmdebstrap"
start=$(date +%s)
include=()
[ ${#packages[@]} -gt 0 ] && include=("--include=$(
  IFS=,
  echo "${packages[*]}"
)")
SOURCE_DATE_EPOCH=1700000000 mmdebstrap --variant=minbase --mode=root --quiet "${include[@]}" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
  --aptopt='APT::Install-Recommends "false"' \
  "$suite" "$build/rootfs" "$mirror" >&2

# What differs from one build to the next and nothing in an image reads.
root=$build/rootfs
rm -rf "$root"/var/log/* "$root"/var/cache/apt/* "$root"/var/cache/ldconfig/* "$root"/var/lib/apt/lists/* \
  "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old "$root"/dev/* "$root"/run/* "$root"/tmp/* \
  "$root"/etc/apt/sources.list "$root"/etc/apt/sources.list.d/* "$root"/etc/hostname "$root"/etc/resolv.conf
find "$root" -name '__pycache__' -type d -prune -exec rm -rf {} +
: >"$root/etc/machine-id"
# The images' user (65532, as distroless' nonroot): a home it owns; the root filesystem itself stays read-only.
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin' >>"$root/etc/passwd"
echo 'nonroot:x:65532:' >>"$root/etc/group"
mkdir -p "$root/home/nonroot"
chown 65532:65532 "$root/home/nonroot"

mv "$root" "$cache/rootfs"
date -u +%FT%TZ >"$cache/ready"
log "ready in $(($(date +%s) - start)) s: $cache ($(du -sh "$cache/rootfs" | cut -f1))"
echo "$cache"

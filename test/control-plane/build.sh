#!/usr/bin/env bash
# Ensures kube-apiserver and etcd binaries exist and prints the directory holding them.
#
# Order of preference:
#   1. KUBEBUILDER_ASSETS (a directory with kube-apiserver and etcd, as envtest uses)
#   2. TEST_ASSET_KUBE_APISERVER + TEST_ASSET_ETCD (paths to the two binaries)
#   3. the per-version cache ${XDG_CACHE_HOME:-$HOME/.cache}/bpa-functions/k8s/<versions>/
#   4. a build from the wrapper Go modules beside this script, into that cache
#
# Progress goes to stderr; the last line on stdout is the assets directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.env"

log() { printf '[control-plane] %s\n' "$*" >&2; }

if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  for b in kube-apiserver etcd; do
    [ -x "$KUBEBUILDER_ASSETS/$b" ] || { log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS has no executable $b"; exit 1; }
  done
  log "using binaries from KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
  echo "$KUBEBUILDER_ASSETS"
  exit 0
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/bpa-functions/k8s/kube-apiserver-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}"
mkdir -p "$cache"

if [ -n "${TEST_ASSET_KUBE_APISERVER:-}" ] || [ -n "${TEST_ASSET_ETCD:-}" ]; then
  : "${TEST_ASSET_KUBE_APISERVER:?TEST_ASSET_ETCD is set, TEST_ASSET_KUBE_APISERVER must be too}"
  : "${TEST_ASSET_ETCD:?TEST_ASSET_KUBE_APISERVER is set, TEST_ASSET_ETCD must be too}"
  dir=$(mktemp -d "${TMPDIR:-/tmp}/bpa-assets.XXXXXX")
  ln -s "$(realpath "$TEST_ASSET_KUBE_APISERVER")" "$dir/kube-apiserver"
  ln -s "$(realpath "$TEST_ASSET_ETCD")" "$dir/etcd"
  log "using TEST_ASSET_KUBE_APISERVER=$TEST_ASSET_KUBE_APISERVER TEST_ASSET_ETCD=$TEST_ASSET_ETCD"
  echo "$dir"
  exit 0
fi

command -v go >/dev/null || { log "go is not installed: install Go or set KUBEBUILDER_ASSETS (see README)"; exit 1; }
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod

# Runs a build and records its wall time and peak memory (GNU time, when present) on stderr
# and in <cache>/<name>.build.json, which the control-plane benchmark reports.
timed() {
  local name=$1; shift
  local start=$SECONDS stats="$cache/$name.time"
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -o "$stats" -f '%e %M' "$@"
  else
    "$@"
    echo "$((SECONDS - start)) 0" >"$stats"
  fi
  local wall rss
  read -r wall rss <"$stats"
  rm -f "$stats"
  log "$name: ${wall} s wall, ${rss} KiB peak RSS"
  printf '{"binary":"%s","wallSeconds":%s,"peakRssKiB":%s,"builtAt":"%s","goVersion":"%s","cores":%s}\n' \
    "$name" "$wall" "$rss" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(go env GOVERSION)" "$(nproc)" \
    >"$cache/$name.build.json"
  log "$name built in $((SECONDS - start)) s"
}

build_one() {
  local name=$1 module_dir=$2 pkg=$3; shift 3
  if [ -x "$cache/$name" ]; then
    log "$name: cached at $cache/$name"
    return
  fi
  log "$name: building $pkg (first time on this machine: minutes)"
  (cd "$here/$module_dir" && timed "$name" go build -trimpath "$@" -o "$cache/$name.tmp" "$pkg")
  mv "$cache/$name.tmp" "$cache/$name"
}

major=${KUBERNETES_VERSION#v}; major=${major%%.*}
minor=${KUBERNETES_VERSION#v*.}; minor=${minor%%.*}
ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=${KUBERNETES_VERSION} -X $p.gitMajor=${major} -X $p.gitMinor=${minor}"
done

build_one etcd etcd go.etcd.io/etcd/server/v3
build_one kube-apiserver apiserver k8s.io/kubernetes/cmd/kube-apiserver -ldflags "-s -w${ldflags}"
echo "$cache"

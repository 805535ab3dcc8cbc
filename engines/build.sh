#!/usr/bin/env bash
# Ensures the Go-built engines of the one-machine cluster exist and prints the directory holding
# them. Usage: engines/build.sh [control-plane|s3|knative|knative-serving]
#
# control-plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler.
# s3: versitygw, the S3 server of the image service's tests and `bpa dev` (override:
#   TEST_ASSET_VERSITYGW; cache ${XDG_CACHE_HOME:-$HOME/.cache}/bpa-functions/versitygw-<version>/).
# knative: Knative Eventing's binaries (controller, webhook, mtchannel_broker, ingress, filter,
#   channel_controller, channel_dispatcher, apiserver_receive_adapter, mtping, jobsink, requestreply,
#   event_display), one go build (override: KNATIVE_EVENTING_ASSETS, a directory holding them all;
#   cache .../bpa-functions/knative-eventing-<version>/). docs/knative.md.
# knative-serving: Knative Serving's admission webhook, `webhook` (override: KNATIVE_SERVING_ASSETS;
#   cache .../bpa-functions/knative-serving-<version>/).
# gitops-check: the GitOps health checker of test/integration/gitops (engines/gitops-check: kstatus
#   from sigs.k8s.io/cli-utils, cel-go as Flux runs healthCheckExprs, gopher-lua as Argo CD runs its
#   health checks), our own main package; override TEST_ASSET_GITOPS_CHECK; cache
#   .../bpa-functions/gitops-check-<hash of its go.mod, go.sum and main.go>/, so an edit rebuilds it.
# bmo: Metal3's baremetal-operator (github.com/metal3-io/baremetal-operator, BMO_VERSION), run by
#   test/integration/functions/metal3-provisioning.test.ts with its fixture provisioner (-test-mode,
#   no Ironic); override TEST_ASSET_BMO; cache .../bpa-functions/bmo-<version>/. Its CRDs are read
#   from the module in the Go module cache at test time (`go env GOMODCACHE`), never copied here.
# containerd: containerd, containerd-shim-runc-v2 and ctr (github.com/containerd/containerd/v2,
#   CONTAINERD_VERSION; CGO_ENABLED=0, no snapshotters but overlayfs and native), the container runtime
#   of the real node (local/kubelet-node); override CONTAINERD_ASSETS, a directory holding all three;
#   cache .../bpa-functions/containerd-<version>/.
# node: kubelet and kube-proxy from the Kubernetes wrapper module (KUBERNETES_VERSION); override
#   NODE_ASSETS; cache .../bpa-functions/node-<version>/. (The sandbox's `pause` is built once, by
#   local/images/inputs.ts pauseBinary, for the node and the project's `pause` image alike.)
# coredns: CoreDNS (github.com/coredns/coredns, COREDNS_VERSION), the real node's cluster DNS;
#   override TEST_ASSET_COREDNS; cache .../bpa-functions/coredns-<version>/.
# For each binary, in order of preference:
#   1. KUBEBUILDER_ASSETS (a directory with kube-apiserver and etcd, as envtest uses; it may hold
#      kube-controller-manager and kube-scheduler too)
#   2. TEST_ASSET_<NAME> (TEST_ASSET_KUBE_APISERVER, TEST_ASSET_ETCD,
#      TEST_ASSET_KUBE_CONTROLLER_MANAGER, TEST_ASSET_KUBE_SCHEDULER: paths to binaries)
#   3. the per-version cache ${XDG_CACHE_HOME:-$HOME/.cache}/bpa-functions/k8s/<versions>/
#   4. a build from the wrapper Go modules beside this script, into that cache
#
# Progress goes to stderr; the last line on stdout is a directory holding all four binaries
# (the cache itself, or a fresh directory of links when overrides were used).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.env"
set_name=${1:-control-plane}
case "$set_name" in
  control-plane | s3 | knative | knative-serving | gitops-check | bmo | containerd | node | coredns) ;;
  *)
    echo "usage: engines/build.sh [control-plane|s3|knative|knative-serving|gitops-check|bmo|containerd|node|coredns]" >&2
    exit 2
    ;;
esac

log() { printf '[engines] %s\n' "$*" >&2; }

root="${XDG_CACHE_HOME:-$HOME/.cache}/bpa-functions"
if [ "$set_name" = s3 ]; then
  cache="$root/versitygw-${VERSITYGW_VERSION}"
elif [ "$set_name" = knative ]; then
  cache="$root/knative-eventing-${KNATIVE_EVENTING_VERSION}"
elif [ "$set_name" = knative-serving ]; then
  cache="$root/knative-serving-${KNATIVE_SERVING_VERSION}"
elif [ "$set_name" = bmo ]; then
  cache="$root/bmo-${BMO_VERSION}"
elif [ "$set_name" = containerd ]; then
  cache="$root/containerd-${CONTAINERD_VERSION}"
elif [ "$set_name" = node ]; then
  cache="$root/node-${KUBERNETES_VERSION}"
elif [ "$set_name" = coredns ]; then
  cache="$root/coredns-${COREDNS_VERSION}"
elif [ "$set_name" = gitops-check ]; then
  gitops_hash=$(cat "$here/gitops-check/go.mod" "$here/gitops-check/go.sum" "$here/gitops-check/main.go" | sha256sum | cut -c1-12)
  cache="$root/gitops-check-${gitops_hash}"
else
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/bpa-functions/k8s/kube-apiserver-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}"
fi
mkdir -p "$cache"
# One build at a time per cache: a second caller waits for the first, then finds the binaries.
if command -v flock >/dev/null; then
  exec 9>"$cache/.build.lock"
  flock 9
fi

binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler)
override_var() { local up=${1^^}; echo "TEST_ASSET_${up//-/_}"; }

if { [ -n "${TEST_ASSET_KUBE_APISERVER:-}" ] && [ -z "${TEST_ASSET_ETCD:-}" ]; } ||
  { [ -z "${TEST_ASSET_KUBE_APISERVER:-}" ] && [ -n "${TEST_ASSET_ETCD:-}" ]; }; then
  log "set both TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD, or neither"
  exit 1
fi
if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  for b in kube-apiserver etcd; do
    [ -x "$KUBEBUILDER_ASSETS/$b" ] || { log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS has no executable $b"; exit 1; }
  done
fi

# Where a binary comes from without a build, or nothing.
provided() {
  local name=$1 var
  var=$(override_var "$name")
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/$name" ]; then
    echo "$KUBEBUILDER_ASSETS/$name"
  elif [ -n "${!var:-}" ]; then
    [ -x "${!var}" ] || { log "$var=${!var} is not an executable file"; exit 1; }
    echo "${!var}"
  fi
}

# Runs a build and records its wall time and peak memory (GNU time, when present) on stderr and
# in <cache>/<name>.build.json for every binary it produced; the benchmark reports them.
timed() {
  local label=$1 names=$2; shift 2
  local start=$SECONDS stats="$cache/$label.time"
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -o "$stats" -f '%e %M' "$@"
  else
    "$@"
    echo "$((SECONDS - start)) 0" >"$stats"
  fi
  local wall rss
  read -r wall rss <"$stats"
  rm -f "$stats"
  log "$label: ${wall} s wall, ${rss} KiB peak RSS"
  for name in $names; do
    printf '{"binary":"%s","builtWith":"%s","wallSeconds":%s,"peakRssKiB":%s,"builtAt":"%s","goVersion":"%s","cores":%s}\n' \
      "$name" "$label" "$wall" "$rss" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(go env GOVERSION)" "$(nproc)" \
      >"$cache/$name.build.json"
  done
}

need_build() {
  local name
  for name in "$@"; do
    [ -n "$(provided "$name")" ] && continue
    [ -x "$cache/$name" ] && continue
    echo "$name"
  done
}

build_go() {
  command -v go >/dev/null || { log "go is not installed: install Go or set KUBEBUILDER_ASSETS (see docs/control-plane.md)"; exit 1; }
  export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
  local module_dir=$1 label=$2 names=$3; shift 3
  # Build tags of the set (containerd's), empty for the others.
  [ -n "${BUILD_TAGS:-}" ] && set -- -tags "$BUILD_TAGS" "$@"
  local out="$cache/.build-$label"
  rm -rf "$out" && mkdir -p "$out"
  log "$label: building $names (first time on this machine: minutes)"
  # A single package is written to its own name (go would name etcd's main package "server").
  local target="$out/"
  [ "$names" = "${names%% *}" ] && target="$out/$names"
  # A line a minute, so a cold build (10-20 minutes) is visibly alive.
  local started=$SECONDS
  (while sleep 60; do log "$label: still building ($((SECONDS - started)) s)"; done) &
  local heartbeat=$!
  (cd "$here/$module_dir" && timed "$label" "$names" go build -trimpath -o "$target" "$@") ||
    { kill "$heartbeat" 2>/dev/null; exit 1; }
  kill "$heartbeat" 2>/dev/null || true
  for name in $names; do mv "$out/$name" "$cache/$name"; done
  rm -rf "$out"
}

# A set of main packages of one wrapper module, built together into the cache unless the override
# directory (first argument) holds them all. Prints the directory.
knative_set() {
  local override=$1 module_dir=$2 label=$3 prefix=$4; shift 4
  local cmds=("$@") names=() missing=() pkgs=() cmd name
  for cmd in "${cmds[@]}"; do names+=("${cmd##*/}"); done
  if [ -n "${!override:-}" ]; then
    for name in "${names[@]}"; do
      [ -x "${!override}/$name" ] || { log "$override=${!override} has no executable $name"; exit 1; }
    done
    log "$label: using $override=${!override}"
    echo "${!override}"
    exit 0
  fi
  for cmd in "${cmds[@]}"; do
    [ -x "$cache/${cmd##*/}" ] || { missing+=("${cmd##*/}"); pkgs+=("$prefix/$cmd"); }
  done
  if [ ${#missing[@]} -gt 0 ]; then
    build_go "$module_dir" "$label" "${missing[*]}" -ldflags "-s -w" "${pkgs[@]}"
  fi
  log "$label: ${names[*]} in $cache"
  echo "$cache"
  exit 0
}
if [ "$set_name" = knative ]; then
  knative_set KNATIVE_EVENTING_ASSETS knative-eventing knative-eventing knative.dev/eventing/cmd \
    apiserver_receive_adapter broker/filter broker/ingress controller event_display \
    in_memory/channel_controller in_memory/channel_dispatcher jobsink mtchannel_broker mtping \
    requestreply webhook
fi
if [ "$set_name" = knative-serving ]; then
  knative_set KNATIVE_SERVING_ASSETS knative-serving knative-serving knative.dev/serving/cmd webhook
fi

# One main package of the wrapper module engines/<name>, built into the cache as <name> unless an
# override (KUBEBUILDER_ASSETS, TEST_ASSET_<NAME>) provides the binary. Prints the directory.
single_binary() {
  local name=$1 package=$2 src
  src=$(provided "$name")
  if [ -n "$src" ]; then
    log "$name: using $src"
    dirname "$(realpath "$src")"
    exit 0
  fi
  [ -x "$cache/$name" ] || build_go "$name" "$name" "$name" -ldflags "-s -w" "$package"
  log "$name: $cache/$name"
  echo "$cache"
  exit 0
}
case "$set_name" in
  # Our own main package: `go build .` in its module (a minute or three the first time).
  gitops-check) single_binary gitops-check . ;;
  bmo) single_binary bmo github.com/metal3-io/baremetal-operator ;;
  coredns) single_binary coredns github.com/coredns/coredns ;;
  s3) single_binary versitygw github.com/versity/versitygw/cmd/versitygw ;;
esac

# Kubernetes' own binaries (the control plane, the node's): stripped, and reporting their version
# (component-base, client-go) as Kubernetes' release build sets it.
kubernetes_ldflags() {
  local major minor flags="-s -w" p
  major=${KUBERNETES_VERSION#v}; major=${major%%.*}
  minor=${KUBERNETES_VERSION#v*.}; minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $p.gitVersion=${KUBERNETES_VERSION} -X $p.gitMajor=${major} -X $p.gitMinor=${minor}"
  done
  echo "$flags"
}

if [ "$set_name" = containerd ]; then
  # Static (CGO_ENABLED=0), so no btrfs, devmapper, zfs or aufs snapshotter: the node uses overlayfs.
  BUILD_TAGS="no_btrfs no_devmapper no_zfs no_aufs"
  knative_set CONTAINERD_ASSETS containerd containerd github.com/containerd/containerd/v2/cmd \
    containerd containerd-shim-runc-v2 ctr
fi

if [ "$set_name" = node ]; then
  if [ -n "${NODE_ASSETS:-}" ]; then
    for name in kubelet kube-proxy; do
      [ -x "$NODE_ASSETS/$name" ] || { log "NODE_ASSETS=$NODE_ASSETS has no executable $name"; exit 1; }
    done
    log "node: using NODE_ASSETS=$NODE_ASSETS"
    echo "$NODE_ASSETS"
    exit 0
  fi
  missing=() pkgs=()
  for name in kubelet kube-proxy; do
    [ -x "$cache/$name" ] || { missing+=("$name"); pkgs+=("k8s.io/kubernetes/cmd/$name"); }
  done
  # The same wrapper module as the control plane, so its Go build cache is shared.
  [ ${#missing[@]} -eq 0 ] || build_go kubernetes kubernetes-node "${missing[*]}" -ldflags "$(kubernetes_ldflags)" "${pkgs[@]}"
  log "node: kubelet kube-proxy in $cache"
  echo "$cache"
  exit 0
fi

if [ -n "$(need_build etcd)" ]; then
  build_go etcd etcd etcd go.etcd.io/etcd/server/v3
fi
kube=$(need_build kube-apiserver kube-controller-manager kube-scheduler | tr '\n' ' ')
if [ -n "${kube// /}" ]; then
  pkgs=()
  for name in $kube; do pkgs+=("k8s.io/kubernetes/cmd/$name"); done
  # One go build for all of them: the shared packages compile once.
  build_go kubernetes kubernetes "${kube% }" -ldflags "$(kubernetes_ldflags)" "${pkgs[@]}"
fi
for name in "${binaries[@]}"; do [ -n "$(provided "$name")" ] || log "$name: $cache/$name"; done

# One directory with all four: the cache itself, unless something came from an override.
overridden=""
for name in "${binaries[@]}"; do [ -n "$(provided "$name")" ] && overridden=yes; done
if [ -z "$overridden" ]; then
  echo "$cache"
  exit 0
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/bpa-assets.XXXXXX")
for name in "${binaries[@]}"; do
  src=$(provided "$name")
  [ -n "$src" ] && log "$name: using $src" || src="$cache/$name"
  ln -s "$(realpath "$src")" "$dir/$name"
done
echo "$dir"

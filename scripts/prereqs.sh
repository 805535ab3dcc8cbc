#!/usr/bin/env bash
# Everything `npm test` and `npm start` need beyond node_modules, installed idempotently:
# Debian packages (OpenSSH server for the SSH tests and the lab, Ansible for the KUD stand-in, Chromium for the
# live-view test), the Go-built control plane
# (kube-apiserver + etcd, cached per version), the S3 server (versitygw, cached per version), Knative
# Eventing and Serving's webhook (for tests, cached per version), the real node's engines (containerd, kubelet,
# kube-proxy, pause, CoreDNS; for tests, cached per version), the compiled TypeScript, and (for tests) typecheck + lint.
set -euo pipefail
cd "$(dirname "$0")/.."

# `prereqs.sh test` (npm test) needs the Debian packages. `prereqs.sh start` (npm start, the demo)
# needs OpenSSH and Ansible only as root: the demo then runs on the node, with real sshd lab hosts
# and the KUD stand-in; without root it falls back to the control plane alone and simulated hosts.
purpose=${1:-test}
need_apt=()
if [ "$purpose" = test ] || [ "$(id -u)" = 0 ]; then
  [ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)   # real sshd hosts (SSH tests, the demo's lab)
  [ -x /usr/bin/ansible ] || need_apt+=(ansible)          # the KUD installer stand-in (local/kud-stand-in)
  # The node (local/kubelet-node) and the lab: network namespaces, veths and bridges; mount
  # namespaces; dnsmasq (the lease publisher's real peer); the control plane's certificates.
  [ -x /usr/sbin/ip ] || need_apt+=(iproute2)
  [ -x /usr/bin/unshare ] || need_apt+=(util-linux)
  [ -x /usr/sbin/dnsmasq ] || need_apt+=(dnsmasq-base)
  [ -x /usr/bin/openssl ] || need_apt+=(openssl)
fi
if [ "$purpose" = test ]; then
  [ -x /usr/bin/chromium ] || need_apt+=(chromium)        # the live view's browser test
  [ -x /usr/bin/mmdebstrap ] || need_apt+=(mmdebstrap)    # the real Debian root of the apt tests
  [ -x /usr/bin/dpkg-scanpackages ] || need_apt+=(dpkg-dev) # its local apt repository
  [ -x /usr/bin/busybox ] || need_apt+=(busybox)          # udhcpc, the DHCP client of the lease publisher test
  # The real node (local/kubelet-node): runc runs its containers, the CNI plugins wire pods to its
  # bridge, nft is kube-proxy's (nftables mode), gcc compiles pause.c (the node's sandbox image and
  # `npm run images`' pause image).
  [ -x /usr/sbin/runc ] || need_apt+=(runc)
  [ -x /usr/lib/cni/bridge ] || need_apt+=(containernetworking-plugins)
  [ -x /usr/sbin/nft ] || need_apt+=(nftables)
  [ -x /usr/bin/gcc ] || need_apt+=(gcc libc6-dev)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "[prereqs] installing Debian packages: ${need_apt[*]}" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >&2
  else
    echo "[prereqs] missing Debian packages: ${need_apt[*]} (install them with sudo apt-get install)" >&2
    exit 1
  fi
fi

# Each real node (containerd, kubelet, kube-proxy, CoreDNS) holds about 20 inotify instances, and a
# test run has up to four nodes at once (both projects' shared ones, two suites' own) beside its
# own watchers: Debian's default of 128 per user runs out and a kubelet fails to start
# ("inotify_init: too many open files"), the limit kind's docs tell multi-node users to raise.
if [ "$purpose" = test ] && [ "$(id -u)" = 0 ] && [ "$(sysctl -n fs.inotify.max_user_instances)" -lt 1024 ]; then
  echo "[prereqs] raising fs.inotify.max_user_instances to 1024 (the real nodes use about 20 each)" >&2
  sysctl -qw fs.inotify.max_user_instances=1024
fi

# The Debian roots are mostly downloads and unpacking, the Go builds below mostly CPU: on a new
# machine the roots are built meanwhile, in the background (minutes saved on a cold run).
roots_pid=
if [ "$purpose" = test ] && [ "$(id -u)" = 0 ]; then
  # In a process group of its own (setsid), so that a failed engine build, which ends this
  # script, ends the roots' builds too (mmdebstrap and its children included).
  # shellcheck disable=SC2016
  setsid bash -c '
    set -euo pipefail
    # The Debian root + local apt repository of the apt tests (scripts/debian-root.sh), cached per version.
    bash scripts/debian-root.sh >/dev/null
    # The Debian roots of the project'"'"'s images (`npm run images`, test/integration/container-images).
    bash scripts/image-roots.sh base >/dev/null
    bash scripts/image-roots.sh kud >/dev/null
  ' &
  roots_pid=$!
  # (The plain pid too: in its first instant the group may not exist yet.)
  trap '[ -z "$roots_pid" ] || kill -- "-$roots_pid" 2>/dev/null || kill "$roots_pid" 2>/dev/null || true' EXIT
fi
bash engines/build.sh >/dev/null
# The S3 server (versitygw) of the image service's tests and `bpa dev`: minutes the first time, then cached.
bash engines/build.sh s3 >/dev/null
if [ "$purpose" = test ]; then
  # Real Knative Eventing (and Serving's admission webhook) for the suites on the real engine
  # (test/integration/knative) and `bpa dev --engine knative`: minutes the first time, then cached.
  bash engines/build.sh knative >/dev/null
  bash engines/build.sh knative-serving >/dev/null
  # The GitOps health checker (kstatus, Flux's CEL, Argo CD's Lua) of test/integration/gitops.
  bash engines/build.sh gitops-check >/dev/null
  # Metal3's baremetal-operator (fixture provisioner, no Ironic) of test/integration/functions/metal3-provisioning.
  bash engines/build.sh bmo >/dev/null
  # The real node: containerd (+ runc shim, ctr), kubelet, kube-proxy, CoreDNS (pause.c is compiled by
  # local/images/inputs.ts, once for the node and the `pause` image).
  bash engines/build.sh containerd >/dev/null
  bash engines/build.sh node >/dev/null
  bash engines/build.sh coredns >/dev/null
fi
if [ -n "$roots_pid" ]; then
  wait "$roots_pid" || { echo "[prereqs] the Debian roots failed (their lines above say why)" >&2; exit 1; }
  roots_pid=
fi
npm run --silent build
if [ "$purpose" = test ]; then
  npm run --silent typecheck
  npm run --silent lint
fi

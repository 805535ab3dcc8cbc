#!/usr/bin/env bash
# Everything `npm test` and `npm start` need beyond node_modules, installed idempotently:
# Debian packages (OpenSSH server for the SSH tests, Chromium for the live-view test), the Go-built control plane
# (kube-apiserver + etcd, cached per version), the compiled TypeScript, and (for tests) typecheck + lint.
set -euo pipefail
cd "$(dirname "$0")/.."

# `prereqs.sh test` (npm test) needs the Debian packages; `prereqs.sh start` (npm start, the demo,
# whose lab hosts are simulated in-process) does not.
purpose=${1:-test}
need_apt=()
if [ "$purpose" = test ]; then
  [ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)   # real sshd hosts in the SSH tests
  [ -x /usr/bin/chromium ] || need_apt+=(chromium)        # the live view's browser test
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

bash engines/build.sh >/dev/null
npm run --silent build
if [ "$purpose" = test ]; then
  npm run --silent typecheck
  npm run --silent lint
fi

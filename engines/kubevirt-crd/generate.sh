#!/usr/bin/env bash
# Regenerates test/fixtures/kubevirt/virtualmachineinstances.kubevirt.io.yaml: KubeVirt's
# VirtualMachineInstance CRD as KubeVirt's operator builds it, from the module pinned in go.mod
# (kubevirt.io/kubevirt, via the Go module proxy). Run by hand when bumping KubeVirt; the result
# is committed (the tests install it, nothing builds it in CI).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
version=$(sed -n 's#^\s*kubevirt.io/kubevirt \(v[^ ]*\)$#\1#p' "$here/go.mod")
api_version=$(sed -n 's#^\s*kubevirt.io/api \(v[^ ]*\).*#\1#p' "$here/go.mod")
out="$here/../../test/fixtures/kubevirt/virtualmachineinstances.kubevirt.io.yaml"
{
  echo "# KubeVirt's VirtualMachineInstance CRD, generated, not written by hand: DO NOT EDIT."
  echo "# Origin: Go module kubevirt.io/kubevirt ${version} (with kubevirt.io/api ${api_version}), from the"
  echo "# Go module proxy; printed by engines/kubevirt-crd (components.NewVirtualMachineInstanceCrd() of"
  echo "# pkg/virt-operator/resource/generate/components, with the OpenAPI validation KubeVirt generates"
  echo "# from its API types), the CRD virt-operator installs. Regenerate: engines/kubevirt-crd/generate.sh."
  echo "# KubeVirt gives VMIs no status subresource: status is written with the object."
  (cd "$here" && go run .)
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "$out"

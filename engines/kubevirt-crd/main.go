// Command kubevirt-crd prints KubeVirt's VirtualMachineInstance CustomResourceDefinition as
// KubeVirt's own operator builds it (components.NewVirtualMachineInstanceCrd, with the OpenAPI
// validation KubeVirt generates from its API types), so the tests install the real CRD of a
// pinned release rather than a hand-written one. Run by engines/kubevirt-crd/generate.sh.
package main

import (
	"fmt"
	"os"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"sigs.k8s.io/yaml"
)

func main() {
	crd, err := components.NewVirtualMachineInstanceCrd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubevirt-crd:", err)
		os.Exit(1)
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubevirt-crd:", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

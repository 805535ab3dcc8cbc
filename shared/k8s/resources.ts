/** Group/version/plural of the custom resources the functions read and write. */
export interface CustomResource {
  group: string;
  version: string;
  plural: string;
}

/** A custom resource of the project's own API group and version (manifests/crds/). */
const bpaResource = (plural: string): CustomResource => ({
  group: 'bpa.akraino.org',
  version: 'v1alpha1',
  plural,
});

export const provisioningsResource = bpaResource('provisionings');
export const softwaresResource = bpaResource('softwares');
export const bareMetalHostsResource: CustomResource = {
  group: 'metal3.io',
  version: 'v1alpha1',
  plural: 'baremetalhosts',
};
/** KubeVirt's VirtualMachineInstances: the nodes of `cluster-type: kubevirt-vm`. */
export const virtualMachineInstancesResource: CustomResource = {
  group: 'kubevirt.io',
  version: 'v1',
  plural: 'virtualmachineinstances',
};

/** The label that marks objects the functions create (and selects the Job ApiServerSource). */
export const managedByLabel = 'app.kubernetes.io/managed-by';
export const managedByValue = 'bpa-functions';

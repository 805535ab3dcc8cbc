import type { KubeConfig } from '@kubernetes/client-node';
import { isStatus } from '../control-plane/apply.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { bareMetalHostsResource } from '../../shared/k8s/resources.js';
import type { LabHost } from './lab-definition.js';

type BareMetalHostObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; resourceVersion?: string };
  spec: Record<string, unknown>;
  status?: Record<string, unknown>;
};

/**
 * The BareMetalHost as Metal3 shows a host it inspected and found running an OS someone else
 * installed: `spec.externallyProvisioned` and `status.provisioning.state: externally provisioned`.
 * That is what the lab's hosts are (network namespaces running sshd already, or bare addresses without a node; no
 * Ironic writes a disk here), and it is one of the two states host-lookup waits for before KUD
 * runs (contract section 13), so the demo goes on at once. The status is written once, not kept
 * by a controller: no Metal3 runs in the lab (the real one is tested in
 * test/integration/functions/metal3-provisioning.test.ts). An image host-lookup writes to such a
 * host is recorded in spec.image; Metal3 would not install it on an externally provisioned host.
 */
function inspectedHost(host: LabHost, namespace: string): BareMetalHostObject {
  return {
    apiVersion: 'metal3.io/v1alpha1',
    kind: 'BareMetalHost',
    metadata: { name: host.bmhName, namespace, labels: { 'bpa.akraino.org/simulated-lab': 'true' } },
    spec: {
      online: true,
      externallyProvisioned: true,
      bootMACAddress: host.mac,
      bmc: { address: `ipmi://${host.ip}:6230`, credentialsName: `${host.bmhName}-bmc` },
    },
    status: {
      // The fields Metal3's own CRD requires, so this works against its schema too.
      errorMessage: '',
      hardwareProfile: 'unknown',
      operationalStatus: 'OK',
      poweredOn: true,
      provisioning: { ID: `simulated-${host.bmhName}`, state: 'externally provisioned', image: { url: '' } },
      hardware: {
        hostname: host.label,
        nics: [
          { name: 'eno1', mac: host.mac, ip: host.ip, speedGbps: 10, pxe: true },
          // A second, unconnected NIC as real servers have.
          { name: 'eno2', mac: host.mac.replace(/..$/, 'ff'), ip: '' },
        ],
      },
    },
  };
}

/**
 * Creates (or updates) a BareMetalHost per lab host and writes its status through the status
 * subresource, the way Metal3's inspection would.
 */
export async function applyLabBareMetalHosts(
  kubeConfig: KubeConfig,
  hosts: readonly LabHost[],
  namespace: string,
): Promise<void> {
  const { custom } = kubeClients(kubeConfig);
  const target = { ...bareMetalHostsResource, namespace };
  for (const host of hosts) {
    const desired = inspectedHost(host, namespace);
    const { status, ...withoutStatus } = desired;
    let current: BareMetalHostObject;
    try {
      current = (await custom.createNamespacedCustomObject({
        ...target,
        body: withoutStatus,
      })) as BareMetalHostObject;
    } catch (error) {
      if (!isStatus(error, 409)) throw error;
      current = (await custom.getNamespacedCustomObject({
        ...target,
        name: host.bmhName,
      })) as BareMetalHostObject;
    }
    await custom.replaceNamespacedCustomObjectStatus({
      ...target,
      name: host.bmhName,
      body: { ...current, status },
    });
  }
}

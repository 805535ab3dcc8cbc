/**
 * The contract's host-resolution errors (contract section 5), one case each: the Provisioning's
 * nodes, and the reason and exact message its HostsResolved and Ready conditions must carry.
 * Shared by the function-level suite (chain-errors.test.ts) and the chain suite on both engines
 * (test/integration/chain/errors.test.ts). The hosts they assume: `createErrorCaseHosts`.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { createBareMetalHost, type NodeSpec } from './fixtures.js';

export interface ErrorCase {
  name: string;
  clusterType?: string;
  masters: NodeSpec[];
  workers?: NodeSpec[];
  reason: string;
  message: string;
}

export const contractErrorCases: ErrorCase[] = [
  {
    name: 'host-not-found',
    masters: [{ label: 'master-1', mac: 'EE:EE:00:00:00:99' }],
    reason: 'HostNotFound',
    message: 'Host with MAC Address ee:ee:00:00:00:99 not found',
  },
  {
    name: 'no-ip',
    masters: [{ label: 'master-1', mac: 'ee:ee:00:00:00:01' }],
    workers: [{ label: 'worker-1', mac: 'ee:ee:00:00:00:02' }],
    reason: 'IpAddressNotFound',
    message: 'IP address not found for host with MAC address ee:ee:00:00:00:02',
  },
  {
    name: 'no-vm',
    clusterType: 'virtlet-vm',
    masters: [{ label: 'vm-1', mac: 'ee:ee:00:00:00:77' }],
    reason: 'VmNotFound',
    message: 'IP address not found for VM with MAC address ee:ee:00:00:00:77',
  },
  {
    name: 'master-without-mac',
    masters: [{ label: 'master-1', mac: '' }],
    reason: 'MacAddressMissing',
    message: 'MAC address for masterNode master-1 not provided',
  },
  {
    name: 'worker-without-mac',
    masters: [{ label: 'master-1', mac: 'ee:ee:00:00:00:01' }],
    workers: [{ label: 'worker-1', mac: '' }],
    reason: 'MacAddressMissing',
    message: 'MAC address for worker worker-1 not provided',
  },
  {
    name: 'same-label-other-mac',
    masters: [{ label: 'master-1', mac: 'ee:ee:00:00:00:01' }],
    workers: [{ label: 'master-1', mac: 'ee:ee:00:00:00:02' }],
    reason: 'DuplicateNodeLabel',
    message:
      'A node with label master-1 already exists, modify resource and assign a different label to node with MACAddress ee:ee:00:00:00:02',
  },
  {
    name: 'other-label-same-mac',
    masters: [{ label: 'master-1', mac: 'ee:ee:00:00:00:01' }],
    workers: [{ label: 'worker-1', mac: 'EE-EE-00-00-00-01' }],
    reason: 'DuplicateMacAddress',
    message:
      'A node with label worker-1 already exists, modify resource and assign a different label to node with MACAddress ee:ee:00:00:00:01',
  },
];

/** The cases' hosts: ee:..:01 has an IP on its NIC, ee:..:02 is known but has no IP anywhere. */
export async function createErrorCaseHosts(kubeConfig: KubeConfig, namespace: string): Promise<void> {
  await createBareMetalHost(kubeConfig, {
    name: 'with-ip',
    namespace,
    bootMac: 'ee:ee:00:00:00:01',
    nics: [{ name: 'eth0', mac: 'ee:ee:00:00:00:01', ip: '10.0.0.1' }],
  });
  await createBareMetalHost(kubeConfig, { name: 'without-ip', namespace, bootMac: 'ee:ee:00:00:00:02' });
}

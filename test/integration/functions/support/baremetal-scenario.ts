/**
 * The bare-metal scenario of the chain suites (test/integration/functions/chain-baremetal.test.ts,
 * function by function; test/integration/chain/baremetal.test.ts, on both engines): an ISC lease
 * file, three BareMetalHosts and Provisioning `edge` of cluster `edge-1`, whose inventory is the
 * golden test/golden/functions/baremetal-hosts.ini.
 *
 * master-2's lease is for its boot MAC, which the Provisioning writes upper case with dashes;
 * worker-1's only lease is not active, so its IP comes from the inspected NIC of host-3 (a
 * second NIC, not the boot one).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { createBareMetalHost, provisioningObject } from './fixtures.js';

export const bareMetalLeaseFile = `# dhcpd.leases written by isc-dhcp-4.4.3-P1
authoring-byte-order little-endian;
server-duid "\\000\\001\\000\\001";

lease 10.10.10.11 {
  starts 3 2026/01/07 10:00:00;
  binding state active;
  hardware ethernet aa:bb:cc:00:01:01;
  client-hostname "master-1";
}
lease 10.10.10.12 {
  binding state active;
  hardware ethernet aa:bb:cc:00:01:02;
}
lease 10.10.20.99 {
  binding state free;
  hardware ethernet aa:bb:cc:00:01:03;
}
`;

/** host-1 (lease only), host-2 (lease, and a NIC IP the lease wins over), host-3 (worker-1's NIC). */
export async function createBareMetalScenarioHosts(kubeConfig: KubeConfig, namespace: string): Promise<void> {
  await createBareMetalHost(kubeConfig, { name: 'host-1', namespace, bootMac: 'aa:bb:cc:00:01:01' });
  await createBareMetalHost(kubeConfig, {
    name: 'host-2',
    namespace,
    bootMac: 'aa:bb:cc:00:01:02',
    nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:01:02', ip: '192.168.99.2' }],
  });
  await createBareMetalHost(kubeConfig, {
    name: 'host-3',
    namespace,
    bootMac: 'aa:bb:cc:00:01:33',
    nics: [
      { name: 'eth0', mac: 'aa:bb:cc:00:01:33', ip: '' },
      { name: 'eth1', mac: 'aa:bb:cc:00:01:03', ip: '10.10.20.21' },
    ],
  });
}

/** Provisioning `edge` (cluster edge-1): two masters, master-2 also a worker, and worker-1. */
export const bareMetalProvisioning = (namespace: string) =>
  provisioningObject({
    name: 'edge',
    namespace,
    cluster: 'edge-1',
    masters: [
      { label: 'master-1', mac: 'aa:bb:cc:00:01:01' },
      { label: 'master-2', mac: 'AA-BB-CC-00-01-02' },
    ],
    workers: [{ label: 'worker-1', mac: 'aa:bb:cc:00:01:03' }, { label: 'master-2' }],
    podSubnet: '10.244.64.0/18',
    kudPlugins: ['onap4k8s', 'emco'],
  });

/** What host-lookup must record in status.nodes for `edge`. */
export const bareMetalExpectedNodes = [
  {
    label: 'master-1',
    roles: ['master'],
    mac: 'aa:bb:cc:00:01:01',
    ip: '10.10.10.11',
    source: 'dhcp-leases',
  },
  {
    label: 'master-2',
    roles: ['master', 'worker'],
    mac: 'aa:bb:cc:00:01:02',
    ip: '10.10.10.12',
    source: 'dhcp-leases',
  },
  { label: 'worker-1', roles: ['worker'], mac: 'aa:bb:cc:00:01:03', ip: '10.10.20.21', source: 'host-nics' },
];

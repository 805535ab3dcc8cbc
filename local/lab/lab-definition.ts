import type { KubernetesObject } from '@kubernetes/client-node';

/**
 * The lab of `bpa demo`: three bare-metal hosts. Two get their IP from the DHCP lease file, one
 * only from its inspected NICs, so the demo shows both IP sources. Nothing here is real hardware:
 * on the node the hosts are sshd daemons in network namespaces of the node's network (labHostsOn
 * gives them its addresses); without it, only the loopback addresses below (no SSH server: no Job runs).
 */
export interface LabHost {
  /** Node label in the Provisioning. */
  label: string;
  role: 'master' | 'worker';
  /** BareMetalHost name. */
  bmhName: string;
  mac: string;
  ip: string;
  /** Whether the DHCP lease file has an active lease for it (else the NICs give the IP). */
  inLeaseFile: boolean;
}

export const labNamespace = 'bpa-demo';
export const labCluster = 'edge-demo';

export const labHosts: readonly LabHost[] = [
  {
    label: 'master-1',
    role: 'master',
    bmhName: 'lab-server-1',
    mac: '52:54:00:b1:0a:01',
    ip: '127.0.0.11',
    inLeaseFile: true,
  },
  {
    label: 'master-2',
    role: 'master',
    bmhName: 'lab-server-2',
    mac: '52:54:00:b1:0a:02',
    ip: '127.0.0.12',
    inLeaseFile: true,
  },
  {
    label: 'worker-1',
    role: 'worker',
    bmhName: 'lab-server-3',
    mac: '52:54:00:b1:0a:03',
    ip: '127.0.0.13',
    inLeaseFile: false,
  },
];

/**
 * The lab's hosts at other addresses, in order (the node's network gives them addresses of its
 * /24): same labels, MACs and IP sources.
 */
export function labHostsOn(ips: readonly string[], hosts: readonly LabHost[] = labHosts): LabHost[] {
  if (ips.length !== hosts.length) throw new Error(`${hosts.length} lab hosts, ${ips.length} addresses`);
  return hosts.map((host, i) => ({ ...host, ip: ips[i]! }));
}

/** The Provisioning the demo applies: two masters and one worker. */
export function labProvisioning(
  namespace = labNamespace,
  cluster = labCluster,
  /** An Image in the namespace for the hosts' spec.image (the demo's uploaded OS image). */
  image?: string,
): KubernetesObject {
  const entry = (host: LabHost) => ({ [host.label]: { 'mac-address': host.mac } });
  return {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name: cluster, namespace, labels: { cluster } },
    spec: {
      masters: labHosts.filter((h) => h.role === 'master').map(entry),
      workers: labHosts.filter((h) => h.role === 'worker').map(entry),
      KUDPlugins: ['onap4k8s'],
      PodSubnet: '10.244.64.0/18',
      ...(image ? { image: { name: image } } : {}),
    },
  } as KubernetesObject;
}

/** The Software the demo applies once the cluster is ready. */
export function labSoftware(namespace = labNamespace, cluster = labCluster): KubernetesObject {
  return {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Software',
    metadata: { name: `${cluster}-tools`, namespace, labels: { cluster } },
    spec: {
      masterSoftware: ['curl', 'htop'],
      workerSoftware: ['curl', { jq: { version: '1.6-2.1' } }],
    },
  } as KubernetesObject;
}

/**
 * A Virtlet VM namespace as the chain suites need it: the Role and RoleBinding docs/deploy.md
 * ("Hosts and VM namespaces", vm-namespace.yaml) tells operators to add, and running VM pods.
 *
 * IMITATION: the VM pods are written by the test, status included (no Virtlet here); they name a
 * scheduler that does not exist, so no scheduler or node ever touches them.
 */
import { CoreV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { createObjects } from './knative-objects.js';

/**
 * docs/deploy.md's vm-namespace.yaml (namespace-less: createObjects places it): host-lookup may
 * list the pods of the VM namespace and claim one (get, patch); kud-job-launch may release it. On both engines of the chain suites the function runs as
 * its ServiceAccount, and without this pair every virtlet-vm lookup is refused with 403.
 */
export const vmNamespaceRbac: KubernetesObject[] = [
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'bpa-functions:host-lookup-vms' },
    rules: [
      { apiGroups: [''], resources: ['pods'], verbs: ['list', 'get', 'patch'] },
      { apiGroups: ['kubevirt.io'], resources: ['virtualmachineinstances'], verbs: ['list', 'get', 'patch'] },
    ],
  } as KubernetesObject,
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'bpa-functions:host-lookup-vms' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'bpa-functions:host-lookup-vms' },
    subjects: [{ kind: 'ServiceAccount', name: 'host-lookup', namespace: 'bpa-system' }],
  } as KubernetesObject,
  // kud-job-launch releases a deleted Provisioning's VM pods (host claims, ADR 0013 point 3).
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'bpa-functions:kud-job-launch-vms' },
    rules: [
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] },
      { apiGroups: ['kubevirt.io'], resources: ['virtualmachineinstances'], verbs: ['get', 'patch'] },
    ],
  } as KubernetesObject,
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'bpa-functions:kud-job-launch-vms' },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'bpa-functions:kud-job-launch-vms',
    },
    subjects: [{ kind: 'ServiceAccount', name: 'kud-job-launch', namespace: 'bpa-system' }],
  } as KubernetesObject,
];

/** Lets host-lookup (the manifests' ServiceAccount) list the VM pods of `namespace`. */
export const createVmNamespaceRbac = (kubeConfig: KubeConfig, namespace: string) =>
  createObjects(kubeConfig, namespace, vmNamespaceRbac);

/**
 * A running Virtlet VM pod, status written as the kubelet would: its networks in `annotation`
 * (Multus' network-status, or the older networks-status), and `podIP` when given.
 */
export async function createVmPod(
  kubeConfig: KubeConfig,
  options: {
    namespace: string;
    name: string;
    networks: object[] | string;
    podIP?: string;
    annotation?: string;
  },
): Promise<void> {
  const { namespace, name, networks, podIP } = options;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const pod = await core.createNamespacedPod({
    namespace,
    body: {
      metadata: {
        name,
        annotations: {
          'kubernetes.io/target-runtime': 'virtlet.cloud',
          [options.annotation ?? 'k8s.v1.cni.cncf.io/network-status']:
            typeof networks === 'string' ? networks : JSON.stringify(networks),
        },
      },
      spec: {
        // Never scheduled: the node would otherwise take the pod and write its status.
        schedulerName: 'virtlet-test-no-scheduler',
        automountServiceAccountToken: false,
        // Pod Security restricted: the chain suites' VM namespace is a tenant's, enforced so.
        securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          {
            name: 'vm',
            image: 'virtlet.cloud/cirros',
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          },
        ],
      },
    },
  });
  await core.replaceNamespacedPodStatus({
    name,
    namespace,
    body: { ...pod, status: { phase: 'Running', ...(podIP ? { podIP, podIPs: [{ ip: podIP }] } : {}) } },
  });
}

/**
 * The Virtlet scenario of the chain suites (chain-variants.test.ts and chain/baremetal.test.ts):
 * vm-1's IP from status.podIP; vm-2's from its default network entry (not the first one), under
 * the older networks-status annotation; vm-broken's annotation is not JSON and is passed over.
 * The Provisioning names de:ad:..:01 as master and de:ad:..:02 (upper case) as worker.
 */
export async function createVirtletScenarioPods(kubeConfig: KubeConfig, namespace: string): Promise<void> {
  await createVmPod(kubeConfig, {
    namespace,
    name: 'vm-1',
    networks: [
      { name: 'cni0', interface: 'eth0', ips: ['10.244.1.5'], mac: 'de:ad:00:00:00:01', default: true },
    ],
    podIP: '10.244.1.5',
  });
  await createVmPod(kubeConfig, {
    namespace,
    name: 'vm-2',
    networks: [
      { name: 'sriov', interface: 'net1', ips: ['192.168.50.2'], mac: 'de:ad:00:00:00:99' },
      { name: 'flannel', interface: 'eth0', ips: ['172.16.0.9'], mac: 'DE:AD:00:00:00:02', default: true },
    ],
    annotation: 'k8s.v1.cni.cncf.io/networks-status',
  });
  await createVmPod(kubeConfig, { namespace, name: 'vm-broken', networks: 'not json' });
}

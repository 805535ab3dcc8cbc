import { randomUUID } from 'node:crypto';
import { cpus, release, totalmem } from 'node:os';
import type { CoordinationV1Api, CoreV1Api, V1Node, V1NodeCondition } from '@kubernetes/client-node';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { describeError } from '../../shared/errors.js';
import { isStatus } from '../control-plane/apply.js';
import { kubeTime } from './node-context.js';

/**
 * The kubelet's registration and heartbeats: the Node object (capacity, allocatable, conditions,
 * addresses, the log endpoint's port, node info), its status refreshed every minute, and its
 * Lease in kube-node-lease renewed every 10 s (what the node lifecycle controller watches).
 */
export interface NodeRegistrationInput {
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  name: string;
  podCidr: string;
  /** daemonEndpoints.kubeletEndpoint.Port: the log server. */
  kubeletPort: number;
  kubeletVersion: string;
  capacity: { cpu: string; memory: string; pods: string };
  log(message: string, fields?: Record<string, unknown>): void;
}

const leaseDurationSeconds = 40;
const leaseRenewMs = 10_000;
const statusRefreshMs = 60_000;
const bootId = randomUUID();

export const nodeCapacity = () => ({
  cpu: String(cpus().length),
  memory: `${Math.floor(totalmem() / 1024)}Ki`,
  pods: '110',
});

function nodeStatus(input: NodeRegistrationInput, since: string): V1Node['status'] {
  const now = kubeTime();
  const condition = (type: string, status: string, reason: string, message: string): V1NodeCondition => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now as unknown as Date,
    lastTransitionTime: since as unknown as Date,
  });
  const resources = { ...input.capacity, 'ephemeral-storage': '100Gi' };
  return {
    capacity: resources,
    allocatable: resources,
    conditions: [
      condition(
        'MemoryPressure',
        'False',
        'KubeletHasSufficientMemory',
        'kubelet has sufficient memory available',
      ),
      condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
      condition(
        'Ready',
        'True',
        'KubeletReady',
        'bpa-node is posting ready status (pods run as local processes)',
      ),
    ],
    addresses: [
      { type: 'InternalIP', address: '127.0.0.1' },
      { type: 'Hostname', address: input.name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: input.kubeletPort } },
    nodeInfo: {
      machineID: bootId.replace(/-/g, ''),
      systemUUID: bootId,
      bootID: bootId,
      kernelVersion: release(),
      osImage: 'bpa-node (no container runtime)',
      containerRuntimeVersion: 'bpa-node://0.1.0',
      kubeletVersion: input.kubeletVersion,
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: process.arch === 'x64' ? 'amd64' : process.arch,
    },
  };
}

export interface NodeRegistration {
  node: V1Node;
  stop(): Promise<void>;
}

export async function registerNode(input: NodeRegistrationInput): Promise<NodeRegistration> {
  const since = kubeTime();
  const body: V1Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: input.name,
      labels: {
        'kubernetes.io/hostname': input.name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': process.arch === 'x64' ? 'amd64' : process.arch,
        'node.bpa.akraino.org/runtime': 'local-processes',
      },
    },
    spec: { podCIDR: input.podCidr, podCIDRs: [input.podCidr] },
  };
  let node: V1Node;
  try {
    node = await input.core.createNode({ body });
  } catch (error) {
    if (!isStatus(error, 409)) throw error;
    node = await input.core.readNode({ name: input.name });
  }
  const writeStatus = async () => {
    node = await input.core.patchNodeStatus(
      { name: input.name, body: { status: nodeStatus(input, since) } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
  };
  await writeStatus();

  const leaseName = { name: input.name, namespace: 'kube-node-lease' };
  const renewLease = async () => {
    const spec = {
      holderIdentity: input.name,
      leaseDurationSeconds,
      // metav1.MicroTime wants exactly six fraction digits; client-node would send a Date with three.
      renewTime: new Date().toISOString().replace(/Z$/, '000Z') as unknown as Date,
    };
    try {
      const lease = await input.coordination.readNamespacedLease(leaseName);
      await input.coordination.replaceNamespacedLease({ ...leaseName, body: { ...lease, spec } });
    } catch (error) {
      if (!isStatus(error, 404)) throw error;
      await input.coordination.createNamespacedLease({
        namespace: leaseName.namespace,
        body: {
          metadata: {
            name: input.name,
            ownerReferences: [
              { apiVersion: 'v1', kind: 'Node', name: input.name, uid: node.metadata?.uid ?? '' },
            ],
          },
          spec,
        },
      });
    }
  };
  await renewLease();
  const keep = (what: string, task: () => Promise<void>) => () =>
    void task().catch((error: unknown) =>
      input.log(`${what} failed`, { error: describeError(error).message }),
    );
  const leaseTimer = setInterval(keep('lease renewal', renewLease), leaseRenewMs);
  const statusTimer = setInterval(keep('node status update', writeStatus), statusRefreshMs);
  leaseTimer.unref();
  statusTimer.unref();
  return {
    node,
    stop: async () => {
      clearInterval(leaseTimer);
      clearInterval(statusTimer);
    },
  };
}

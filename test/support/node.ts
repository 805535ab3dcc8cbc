/**
 * What the run's node (the real node the global setup starts, test/support/global-setup.ts) gives
 * test files: whether it runs, the images the functions' Jobs name (nodeImageEnv), KUD installer
 * images whose outcome the test chooses (local/images/test-images.ts), the Secret the KUD Job
 * mounts, and a wait for the real Job controller to end a Job. Suites that need the node use
 * describeOnNode: without root they skip, saying why, instead of failing.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe } from '@jest/globals';
import {
  BatchV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  type KubernetesObject,
  type KubeConfig,
  type V1Job,
  type V1JobCondition,
} from '@kubernetes/client-node';
import {
  applyObject,
  createNamespace,
  freeLoopbackPort,
  uniqueNamespaceName,
  waitFor,
} from '../../local/control-plane/index.js';
import { applyLabBareMetalHosts } from '../../local/lab/bare-metal-hosts.js';
import type { LabHost } from '../../local/lab/lab-definition.js';
import { renderIscLeaseFile } from '../../local/lab/lease-file.js';
import { startStack, type Stack } from '../../local/stack/index.js';
import type { StackCluster } from '../../local/stack/cluster.js';
import { defaultSshKeySecret, kudMultiClusterPath } from '../../shared/core/kud-job.js';
import { testEnv } from './control-plane-env.js';

/**
 * The functions' image env on the run's node: KUD_IMAGE (the kud-stand-in), CLEANUP_IMAGE,
 * KUBECONFIG_PUBLISHER_IMAGE and INSTALL_JOB_IMAGE naming the project's images the node holds, by
 * digest (their defaults name ghcr.io images no node here holds). Empty without a node.
 */
export function nodeImageEnv(): Record<string, string> {
  const json = process.env[testEnv.nodeImages];
  return json ? (JSON.parse(json) as Record<string, string>) : {};
}

/**
 * KUD_IMAGE values (test images imported into the node under these names): the KUD Job's
 * `./installer` exits 0, exits 1 after a line, never ends, or waits until releaseKudJob gives it
 * its exit code.
 */
export const kudTestImage = {
  succeeds: 'bpa.local/test/kud-succeeds:1',
  fails: 'bpa.local/test/kud-fails:1',
  hangs: 'bpa.local/test/kud-hangs:1',
  waits: 'bpa.local/test/kud-waits:1',
} as const;

/**
 * Ends the installer of kud-waits for this namespace's cluster with the given exit code: writes
 * the release file on the node's hostPath that the KUD Job mounts (see its installer), where the
 * machine sees the node's /opt. The Job
 * may be released before its pod starts; the first pod of the cluster to see the release uses it
 * up (so release a replaced Job only once its predecessor's pod is gone: waitForPodsGone).
 */
export async function releaseKudJob(namespace: string, cluster: string, exitCode: 0 | 1): Promise<void> {
  const root = process.env[testEnv.nodeHostPaths];
  if (!root) throw new Error(`${testEnv.nodeHostPaths} is not set: the run has no node`);
  const dir = join(root, kudMultiClusterPath, '.test-release', namespace);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, cluster), `${exitCode}\n`);
}

/** The line the failing image prints before it exits 1 (its `kubectl logs`). */
export const kudFailsLine = (cluster: string) =>
  `[kud-installer test image] fails: installer --cluster ${cluster} exits 1`;

/** Why the run has no node, or undefined when it has one. */
export function noNodeReason(): string | undefined {
  if (process.env[testEnv.node]) return undefined;
  return (
    process.env[testEnv.noNode] ?? `${testEnv.node} is not set (run in the integration or resilience project)`
  );
}

/** describe() when the run's node runs; otherwise describe.skip(), the reason in the name and on stderr. */
export function describeOnNode(name: string, body: () => void): void {
  const reason = noNodeReason();
  if (!reason) {
    describe(name, body);
    return;
  }
  process.stderr.write(`[node] skipping "${name}": it needs the run's node, and ${reason}\n`);
  describe.skip(`${name} (skipped: needs the node; ${reason})`, body);
}

/**
 * The Secret the KUD Job mounts (SSH_KEY_SECRET's default). The test images read nothing from it,
 * but the node, like a kubelet, starts no container whose Secret volume is missing.
 */
export async function createKudSshKeySecret(
  kubeConfig: KubeConfig,
  namespace: string,
  name = defaultSshKeySecret,
): Promise<void> {
  await kubeConfig.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace,
    body: {
      metadata: { name },
      stringData: { id_rsa: 'not a key: the test installer images read none\n', 'id_rsa.pub': 'none\n' },
    },
  });
}

const ended = (job: V1Job): V1JobCondition | undefined =>
  job.status?.conditions?.find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');

/**
 * Waits until the real Job controller ends the Job (condition Complete or Failed True) and returns
 * it, as the API serves it. Throws with the Job's last status on timeout.
 */
export async function waitForJobEnd(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  timeoutMs = 180_000,
): Promise<V1Job & { ended: V1JobCondition }> {
  const batch = kubeConfig.makeApiClient(BatchV1Api);
  let last: V1Job | undefined;
  try {
    return await waitFor(
      async () => {
        last = await batch.readNamespacedJob({ name, namespace });
        const condition = ended(last);
        return condition ? Object.assign(last, { ended: condition }) : undefined;
      },
      { what: `Job ${namespace}/${name} Complete or Failed`, timeoutMs, intervalMs: 250 },
    );
  } catch (error) {
    const status = JSON.stringify(last?.status ?? {});
    throw new Error(`${(error as Error).message}; last status ${status}`, { cause: error });
  }
}

/** The log of the (newest) pod of a Job, through kube-apiserver and the node's log endpoint. */
export async function jobPodLog(kubeConfig: KubeConfig, namespace: string, job: string): Promise<string> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const pods = (await core.listNamespacedPod({ namespace, labelSelector: `job-name=${job}` })).items;
  const created = (pod: (typeof pods)[number]) => new Date(pod.metadata?.creationTimestamp ?? 0).getTime();
  const newest = pods.sort((a, b) => created(a) - created(b)).at(-1);
  if (!newest?.metadata?.name) throw new Error(`Job ${namespace}/${job} has no pod`);
  return core.readNamespacedPodLog({ namespace, name: newest.metadata.name, container: 'kud' });
}

/** Waits until no pod matches the label selector (a deleted Job's pods, removed by the garbage collector). */
export async function waitForPodsGone(
  kubeConfig: KubeConfig,
  namespace: string,
  labelSelector: string,
  timeoutMs = 120_000,
): Promise<void> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await waitFor(
    async () =>
      (await core.listNamespacedPod({ namespace, labelSelector })).items.length === 0 ? true : undefined,
    { what: `no pod left in ${namespace} matching ${labelSelector}`, timeoutMs, intervalMs: 250 },
  );
}

export interface NodeLabStackOptions {
  cluster: StackCluster;
  /** The lab hosts: in the lease file and as inspected BareMetalHosts of the new namespace. */
  hosts: readonly LabHost[];
  /** The key pair the real sshd hosts accept, as the KUD Job's `ssh-key-secret`. */
  sshKey: { privateKey: string; publicKey: string };
  /** A temporary directory of the test (the lease file and the stack's log go there). */
  dir: string;
  namespacePrefix: string;
  /** More function env (deadlines, images); the lab's lease file and namespace are set here. */
  functionsEnv?: Record<string, string>;
}

/**
 * A node suite's lab on its own cluster: a namespace with the hosts' BareMetalHosts and the SSH
 * key Secret, a DHCP lease file naming them, and the embedded stack's functions reading both.
 */
export async function startNodeLabStack(
  options: NodeLabStackOptions,
): Promise<{ namespace: string; functionsNamespace: string; stack: Stack }> {
  const { cluster, hosts, dir } = options;
  const leases = join(dir, 'dhcpd.leases');
  await writeFile(leases, renderIscLeaseFile([...hosts]));
  const namespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName(options.namespacePrefix));
  await applyLabBareMetalHosts(cluster.kubeConfig, [...hosts], namespace);
  // The KUD Job runs in the functions' namespace and mounts the operator's key there (contract
  // section 12); software-install reads the Software's namespace's own copy.
  const functionsNamespace = await createNamespace(
    cluster.kubeConfig,
    uniqueNamespaceName(`${options.namespacePrefix}-fns`),
  );
  for (const at of [namespace, functionsNamespace])
    await applyObject(KubernetesObjectApi.makeApiClient(cluster.kubeConfig), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: defaultSshKeySecret, namespace: at },
      stringData: { id_rsa: options.sshKey.privateKey, 'id_rsa.pub': options.sshKey.publicKey },
    } as KubernetesObject);
  const stack = await startStack({
    kubeconfig: cluster.kubeconfigPath,
    port: await freeLoopbackPort(),
    log: () => undefined,
    logFile: join(dir, 'stack.log'),
    functionsEnv: {
      LEASES_SOURCE: leases,
      BMH_NAMESPACE: namespace,
      SWEEP_NAMESPACES: namespace,
      FUNCTIONS_NAMESPACE: functionsNamespace,
      ...options.functionsEnv,
    },
  });
  return { namespace, functionsNamespace, stack };
}

/**
 * The KUD Job on the one-machine cluster, end to end: the embedded stack's functions launch it,
 * Kubernetes' own Job controller and garbage collector (kube-controller-manager) run it and
 * clean up after it, and the real node (local/kubelet-node: kubelet + containerd) runs its
 * container from the project's kud-stand-in image, the KUD installer STAND-IN (local/kud-stand-in:
 * real Ansible reads the inventory and runs its stand-in playbook on every host with real
 * ansible-playbook; it installs nothing). The hosts are real OpenSSH sshd daemons
 * in network namespaces on the node's lab bridge (local/lab): four answer, one accepts connections
 * and never answers, and one address has nothing behind it. Nothing patches a Job's status here.
 * Starts its own cluster (its own node index), so it never disturbs the shared suites. Needs root.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  type KubernetesObject,
  type V1Job,
} from '@kubernetes/client-node';
import { applyObject, isStatus, waitFor } from '../../../local/control-plane/index.js';
import type { LabHost } from '../../../local/lab/lab-definition.js';
import { createLabNetwork, type LabNetwork } from '../../../local/lab/lab-network.js';
import { startSshHosts, type SshHosts } from '../../../local/lab/openssh-hosts.js';
import type { Stack } from '../../../local/stack/index.js';
import { startStackCluster, type StackCluster } from '../../../local/stack/cluster.js';
import { startNodeLabStack } from '../../support/node.js';

const run = promisify(execFile);
/** Long enough for the stand-in's Ansible run on a busy machine, short enough to wait for. */
const deadlineSeconds = 90;
/** Contract section 10: section 6's text, then the pod whose logs say why. */
const jobFailedMessage = (cluster: string, pod: string) =>
  `Job Failed, KUD not installed in Cluster ${cluster}, check pod logs (pod ${pod})`;
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

let cluster: StackCluster;
let network: LabNetwork;
let sshd: SshHosts;
let stack: Stack;
let dir: string;
let namespace: string;
/** The functions' namespace: the KUD Jobs and their pods run there (contract section 12). */
let functionsNamespace: string;
let cacheDir: string;

/**
 * answering-1 to answering-4 answer; silent-1 never does; nowhere-1 is an address
 * with no host. A host serves one Provisioning at a time (its BareMetalHost's consumerRef, contract
 * section 12), so each cluster of this file has hosts of its own.
 */
let hosts: Record<'answering1' | 'answering2' | 'answering3' | 'answering4' | 'silent' | 'nowhere', LabHost>;

const host = (label: string, mac: string, ip: string, role: LabHost['role']): LabHost => ({
  label,
  role,
  bmhName: `server-${label}`,
  mac,
  ip,
  inLeaseFile: true,
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bpa-kud-node-'));
  cacheDir = join(dir, 'kubectl-cache');
  cluster = await startStackCluster({ fallBack: false });
  network = await createLabNetwork(cluster.nodeNetwork!, [251, 252, 253, 254, 249]);
  const [a, b, c, d, e] = network.hosts as [
    LabNetwork['hosts'][0],
    LabNetwork['hosts'][0],
    LabNetwork['hosts'][0],
    LabNetwork['hosts'][0],
    LabNetwork['hosts'][0],
  ];
  sshd = await startSshHosts({
    count: 5,
    addresses: [a.ip, b.ip, c.ip, d.ip, e.ip],
    netns: [a.netns, b.netns, c.netns, d.netns, e.netns],
    port: 22,
    username: 'root',
    behaviours: [
      { kind: 'lab' },
      { kind: 'lab' },
      { kind: 'hang', seconds: 600 },
      { kind: 'lab' },
      { kind: 'lab' },
    ],
  });
  const prefix = cluster.nodeNetwork!.subnetPrefix;
  hosts = {
    answering1: host('answering-1', '52:54:00:4b:00:01', a.ip, 'master'),
    answering2: host('answering-2', '52:54:00:4b:00:02', b.ip, 'worker'),
    answering3: host('answering-3', '52:54:00:4b:00:05', d.ip, 'master'),
    answering4: host('answering-4', '52:54:00:4b:00:06', e.ip, 'worker'),
    silent: host('silent-1', '52:54:00:4b:00:03', c.ip, 'master'),
    nowhere: host('nowhere-1', '52:54:00:4b:00:04', `${prefix}.250`, 'worker'),
  };
  ({ namespace, functionsNamespace, stack } = await startNodeLabStack({
    cluster,
    hosts: Object.values(hosts),
    sshKey: sshd,
    dir,
    namespacePrefix: 'kud-node',
    functionsEnv: {
      KUD_ACTIVE_DEADLINE_SECONDS: String(deadlineSeconds),
      // The sweep reads the running pod's progress: often enough to see it within the Job's run.
      SWEEP_INTERVAL_SECONDS: '5',
      // The Jobs' images as the real node holds them: the deletion's cleanup Job (its `rm` on the
      // node's hostPath) runs in the project's cleanup image.
      ...cluster.functionsEnv,
      // A cleanup that cannot run gives up well within the deletion test's wait.
      CLEANUP_TIMEOUT_SECONDS: '90',
    },
  }));
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  await sshd?.stopAll();
  await network?.remove();
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

type Conditioned = KubernetesObject & {
  status?: {
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    /** The KUD pod, and for a failed one its last log lines (status.job). */
    job?: { pod?: string; logTail?: string };
    /** Each node, with its progress from the installer's Ansible output (contract section 14). */
    nodes?: {
      label: string;
      phase?: string;
      play?: string;
      task?: string;
      failure?: string;
      message?: string;
    }[];
  };
};

function provisioning(name: string, masters: LabHost[], workers: LabHost[]): KubernetesObject {
  const entry = (h: LabHost) => ({ [h.label]: { 'mac-address': h.mac } });
  return {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name, namespace, labels: { cluster: name } },
    spec: { masters: masters.map(entry), ...(workers.length ? { workers: workers.map(entry) } : {}) },
  } as KubernetesObject;
}

const readProvisioning = async (name: string) =>
  (await cluster.kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
    group: 'bpa.akraino.org',
    version: 'v1alpha1',
    plural: 'provisionings',
    namespace,
    name,
  })) as Conditioned;

const conditionOf = (object: Conditioned, type: string) =>
  object.status?.conditions?.find((c) => c.type === type);

/** Waits for the Provisioning's KudInstalled to be decided (True or False) and returns it. */
async function kudInstalled(name: string) {
  return waitFor(
    async () => {
      const found = conditionOf(await readProvisioning(name), 'KudInstalled');
      return found && found.status !== 'Unknown' ? found : undefined;
    },
    { what: `KudInstalled of ${name} decided`, timeoutMs: 240_000, intervalMs: 500 },
  );
}

const readJob = (cluster_: string): Promise<V1Job> =>
  cluster.kubeConfig
    .makeApiClient(BatchV1Api)
    .readNamespacedJob({ name: `kud-${cluster_}`, namespace: functionsNamespace });
const jobCondition = (job: V1Job, type: string) =>
  job.status?.conditions?.find((c) => c.type === type && c.status === 'True');

const kubectl = async (...args: string[]) =>
  (
    await run(
      'kubectl',
      ['--kubeconfig', cluster.kubeconfigPath, '--cache-dir', cacheDir, '-n', functionsNamespace, ...args],
      { timeout: 60_000 },
    )
  ).stdout;

const apply = (object: KubernetesObject) =>
  applyObject(KubernetesObjectApi.makeApiClient(cluster.kubeConfig), object as never);

describe('the KUD Job on the node', () => {
  it('exit 0 (every host answers): the Job controller marks it Complete and the Provisioning is Ready', async () => {
    await apply(provisioning('reachable', [hosts.answering1], [hosts.answering2]));
    const installed = await kudInstalled('reachable');
    // The reason and message too: a failure then says why (JobDeadlineExceeded on a loaded machine,
    // ObjectConflict, or the pod and, from status.job, its last lines).
    const failed = installed.status !== 'True';
    const logTail = failed ? (await readProvisioning('reachable')).status?.job?.logTail : undefined;
    expect({ ...installed, message: failed ? installed.message : '', logTail }).toMatchObject({
      status: 'True',
      reason: 'KudInstalled',
      message: '',
      logTail: undefined,
    });
    const job = await readJob('reachable');
    expect(jobCondition(job, 'Complete')).toMatchObject({ reason: 'CompletionsReached' });
    expect(job.status?.succeeded).toBe(1);
    const reachable = await readProvisioning('reachable');
    expect(conditionOf(reachable, 'Ready')).toMatchObject({ status: 'True' });
    // Each node's end, read from the installer's PLAY RECAP, at the last play and task it ran.
    expect(reachable.status?.nodes).toEqual([
      expect.objectContaining({
        label: 'answering-1',
        phase: 'Succeeded',
        play: 'Control plane (stand-in, installs nothing)',
        task: 'Run true on the master',
      }),
      expect.objectContaining({
        label: 'answering-2',
        phase: 'Succeeded',
        play: 'Nodes (stand-in, installs nothing)',
        task: 'Run true on the node',
      }),
    ]);
    // The pod really ran on the node, and its log is the stand-in's (through the node's log endpoint).
    const logs = await kubectl('logs', 'job/kud-reachable');
    expect(logs).toContain('[kud-installer stand-in] all 2 host(s) answered');
    expect(logs).toMatch(/^answering-2 +: ok=\d+ +changed=0 +unreachable=0 +failed=0 /m);
    expect(
      await kubectl(
        'get',
        'pods',
        '-l',
        'job-name=kud-reachable',
        '-o',
        'jsonpath={.items[0].spec.nodeName}',
      ),
    ).toBe(cluster.kubeletNode!.name);
  }, 300_000);

  it('exit 1 (a host does not answer): Failed with BackoffLimitExceeded, the contract message, and kubectl logs shows why', async () => {
    await apply(provisioning('unreachable', [hosts.answering3], [hosts.nowhere]));
    const installed = await kudInstalled('unreachable');
    const podName = await kubectl(
      'get',
      'pods',
      '-l',
      'job-name=kud-unreachable',
      '-o',
      'jsonpath={.items[0].metadata.name}',
    );
    expect(podName).toMatch(/^kud-unreachable-[a-z0-9]{5}$/);
    // The contract's message, then the host and the task that failed, in Ansible's words.
    expect(installed).toMatchObject({ status: 'False', reason: 'JobFailed' });
    expect(installed.message).toMatch(
      new RegExp(
        `^${escape(jobFailedMessage('unreachable', podName))}: host nowhere-1 was unreachable at task \\[Ping the host over SSH\\]: .*ssh`,
      ),
    );
    const failedNodes = (await readProvisioning('unreachable')).status?.nodes;
    expect(failedNodes).toEqual([
      expect.objectContaining({ label: 'answering-3', phase: 'Succeeded' }),
      expect.objectContaining({
        label: 'nowhere-1',
        phase: 'Failed',
        failure: 'HostUnreachable',
        play: 'Reach every host (kubespray bootstrap-os)',
        task: 'Ping the host over SSH',
        message: expect.stringContaining('Make sure this host can be reached over ssh'),
      }),
    ]);
    const job = await readJob('unreachable');
    expect(jobCondition(job, 'Failed')).toMatchObject({ reason: 'BackoffLimitExceeded' });
    expect(job.status?.failed).toBe(1);
    const logs = await kubectl('logs', 'job/kud-unreachable');
    expect(logs).toContain('[kud-installer stand-in] FAILED: host(s) did not answer over SSH: nowhere-1');
    expect(logs).toMatch(/^fatal: \[nowhere-1\]: UNREACHABLE! => /m);
    const pod = JSON.parse(await kubectl('get', 'pods', '-l', 'job-name=kud-unreachable', '-o', 'json')) as {
      items: { status: { containerStatuses: { state: { terminated?: { exitCode: number } } }[] } }[];
    };
    expect(pod.items[0]?.status.containerStatuses[0]?.state.terminated?.exitCode).toBe(1);
  }, 300_000);

  it('overrunning its deadline (a host that never answers): Failed with DeadlineExceeded, and the Provisioning says so', async () => {
    await apply(provisioning('silent', [hosts.silent], [hosts.answering4]));
    // While the Job runs (contract section 14): the host that answered is Running at the task
    // Ansible is at, the one that hangs is not named by the output yet.
    const running = await waitFor(
      async () => {
        await stack.sweep();
        const object = await readProvisioning('silent');
        const node = object.status?.nodes?.find((n) => n.label === 'answering-4');
        return node?.phase === 'Running' && !conditionOf(object, 'KudInstalled')?.status.match(/True|False/)
          ? object
          : undefined;
      },
      { what: 'progress of silent while its Job runs', timeoutMs: 80_000, intervalMs: 2000 },
    );
    expect(running.status?.nodes).toEqual([
      expect.objectContaining({ label: 'silent-1', phase: 'Pending' }),
      expect.objectContaining({
        label: 'answering-4',
        phase: 'Running',
        play: 'Reach every host (kubespray bootstrap-os)',
        task: 'Ping the host over SSH',
      }),
    ]);
    const installed = await kudInstalled('silent');
    const job = await readJob('silent');
    expect(jobCondition(job, 'Failed')).toMatchObject({ reason: 'DeadlineExceeded' });
    expect(job.spec?.activeDeadlineSeconds).toBe(deadlineSeconds);
    // Contract section 10: a Job past its deadline says so (not the generic failure message).
    // The pod's last lines beside it (status.job.logTail): another failure then says why.
    const { logTail } = (await readProvisioning('silent')).status?.job ?? {};
    expect({ ...installed, logTail }).toMatchObject({ status: 'False', reason: 'JobDeadlineExceeded' });
    expect(installed.message).toContain(`exceeded its deadline of ${deadlineSeconds} s`);
    expect(conditionOf(await readProvisioning('silent'), 'Ready')).toMatchObject({ status: 'False' });
  }, 300_000);

  it('deleting a Provisioning removes its Job, the Job’s pods and its ConfigMaps through the garbage collector', async () => {
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const owned = async () => ({
      job: await readJob('reachable').then(
        () => true,
        (error: unknown) => (isStatus(error, 404) ? false : Promise.reject(error)),
      ),
      pods: (
        await core.listNamespacedPod({
          namespace: functionsNamespace,
          labelSelector: 'job-name=kud-reachable',
        })
      ).items.length,
      configMaps: (
        await core.listNamespacedConfigMap({ namespace, labelSelector: 'cluster=reachable' })
      ).items.map((c) => c.metadata?.name),
    });
    // What the Provisioning owns, before.
    expect(await owned()).toMatchObject({ job: true, pods: 1 });
    expect((await owned()).configMaps.sort()).toEqual(['reachable-configmap', 'reachable-inventory']);

    await cluster.kubeConfig.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
      group: 'bpa.akraino.org',
      version: 'v1alpha1',
      plural: 'provisionings',
      namespace,
      name: 'reachable',
    });
    await waitFor(
      async () => {
        const left = await owned();
        return !left.job && left.pods === 0 && left.configMaps.length === 0 ? true : undefined;
      },
      // A bound, not a figure: the finalizer's cleanup Job runs on the node first, and on a loaded
      // 2-core machine that and the garbage collector took over three minutes once.
      { what: 'the Job, its pods and the ConfigMaps of reachable gone', timeoutMs: 360_000, intervalMs: 500 },
    );
    // The other clusters' objects are untouched.
    expect((await readJob('unreachable')).metadata?.name).toBe('kud-unreachable');
  }, 420_000);
});

/**
 * Grow and shrink a Ready cluster (contract section 14), end to end on the one-machine cluster: the
 * embedded stack's functions launch each KUD Job, Kubernetes' own Job controller runs it on the
 * real node (local/kubelet-node: kubelet + containerd) from the kud-stand-in image, the KUD installer STAND-IN
 * (local/kud-stand-in: real Ansible reads the inventory and pings every host over SSH, and judges
 * the --scale and --remove-node paths against the cluster it recorded; it installs nothing) runs
 * against real OpenSSH hosts in network namespaces on the node's lab bridge (local/lab).
 * The drain goes through the cluster's kubeconfig as published (the Secret
 * <cluster>-admin-kubeconfig, from admin.conf on the node): since the stand-in installs no
 * Kubernetes, the test makes it write the test's own API server's kubeconfig as admin.conf
 * (KUD_STAND_IN_ADMIN_CONF), so the "installed cluster" is this control plane, where the removed
 * worker's Node is a Node object WITHOUT a kubelet (an imitation) carrying one pod: the cordon and
 * the eviction are the real API server's. Starts its own cluster (its own node index). Needs root.
 */
import { mkdir, readFile, rm, writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { applyObject, isStatus, waitFor } from '../../../local/control-plane/index.js';
import type { LabHost } from '../../../local/lab/lab-definition.js';
import { createLabNetwork, type LabNetwork } from '../../../local/lab/lab-network.js';
import { startSshHosts, type SshHosts } from '../../../local/lab/openssh-hosts.js';
import type { Stack } from '../../../local/stack/index.js';
import { startStackCluster, type StackCluster } from '../../../local/stack/cluster.js';
import { startNodeLabStack, jobPodLog } from '../../support/node.js';

let cluster: StackCluster;
let network: LabNetwork;
let sshd: SshHosts;
let stack: Stack;
let dir: string;
let namespace: string;
let functionsNamespace: string;
let hosts: Record<'master' | 'worker1' | 'worker2', LabHost>;
const name = 'grow';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bpa-grow-shrink-'));
  cluster = await startStackCluster({ fallBack: false });
  network = await createLabNetwork(cluster.nodeNetwork!, [231, 232, 233]);
  const [a, b, c] = network.hosts as [LabNetwork['hosts'][0], LabNetwork['hosts'][0], LabNetwork['hosts'][0]];
  sshd = await startSshHosts({
    count: 3,
    addresses: [a.ip, b.ip, c.ip],
    netns: [a.netns, b.netns, c.netns],
    port: 22,
    username: 'root',
    behaviours: [{ kind: 'lab' }, { kind: 'lab' }, { kind: 'lab' }],
  });
  const host = (label: string, role: LabHost['role'], mac: string, ip: string): LabHost => ({
    label,
    role,
    bmhName: `server-${label}`,
    mac,
    ip,
    inLeaseFile: true,
  });
  hosts = {
    master: host('gs-master-1', 'master', '52:54:00:4d:00:01', a.ip),
    worker1: host('gs-worker-1', 'worker', '52:54:00:4d:00:02', b.ip),
    worker2: host('gs-worker-2', 'worker', '52:54:00:4d:00:03', c.ip),
  };
  ({ namespace, functionsNamespace, stack } = await startNodeLabStack({
    cluster,
    hosts: Object.values(hosts),
    sshKey: sshd,
    dir,
    namespacePrefix: 'grow-shrink',
    // The Jobs' images as the real node holds them.
    functionsEnv: { ...cluster.functionsEnv, KUD_ACTIVE_DEADLINE_SECONDS: '120' },
  }));
  // The installed cluster's kubeconfig is this control plane's: the stand-in writes it as admin.conf.
  // The KUD pod sees the node's hostPath /opt/kud/multi-cluster (the node's own /opt, in its mount
  // namespace), so the file goes there.
  const onNode = `/proc/${cluster.kubeletNode!.sandboxPid}/root/opt/kud/multi-cluster/.test`;
  await mkdir(onNode, { recursive: true });
  await writeFile(join(onNode, 'admin.conf'), await readFile(cluster.kubeconfigPath), { mode: 0o600 });
  await apply({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kud-installer', namespace: functionsNamespace },
    data: { KUD_STAND_IN_ADMIN_CONF: '/opt/kud/multi-cluster/.test/admin.conf' },
  } as KubernetesObject);
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  await sshd?.stopAll();
  await network?.remove();
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

type Condition = {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
};
type Provisioning = KubernetesObject & {
  spec: Record<string, unknown>;
  status?: {
    conditions?: Condition[];
    claimedHosts?: { name: string }[];
    retainedHosts?: { name: string }[];
    job?: { logTail?: string };
  };
};

function apply(object: KubernetesObject) {
  return applyObject(KubernetesObjectApi.makeApiClient(cluster.kubeConfig), object as never);
}
const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
const group = { group: 'bpa.akraino.org', version: 'v1alpha1', plural: 'provisionings' };
const read = async () =>
  (await custom().getNamespacedCustomObject({ ...group, namespace, name })) as Provisioning;
const entry = (h: LabHost) => ({ [h.label]: { 'mac-address': h.mac } });

async function setWorkers(workers: LabHost[]): Promise<number> {
  // A merge patch of the spec alone: the functions write status meanwhile.
  const replaced = (await custom().patchNamespacedCustomObject(
    { ...group, namespace, name, body: { spec: { workers: workers.map(entry) } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  )) as Provisioning;
  return replaced.metadata!.generation!;
}

/** Waits for Ready to be decided for the generation; a failure shows its message and log tail. */
async function readyFor(generation: number) {
  const ready = await waitFor(
    async () => {
      const live = await read();
      const found = live.status?.conditions?.find((c) => c.type === 'Ready');
      if (found && found.observedGeneration === generation && found.status !== 'Unknown')
        return { ...found, logTail: live.status?.job?.logTail };
      // On a timeout, the conditions as they stand say where the chain stopped.
      const seen = (live.status?.conditions ?? []).map(
        (c) => `${c.type}=${c.status}/${c.reason ?? ''}@${c.observedGeneration ?? '?'}: ${c.message ?? ''}`,
      );
      // And the published kubeconfig's digest the drain compares the Secret with.
      const digest = (live.status as { kubeconfigSha256?: string } | undefined)?.kubeconfigSha256;
      throw new Error(
        `generation ${live.metadata?.generation}; ${seen.join('; ')}; kubeconfigSha256 ${digest ?? 'absent'}`,
      );
    },
    { what: `Ready of ${name} decided for generation ${generation}`, timeoutMs: 240_000, intervalMs: 500 },
  );
  expect(ready).toMatchObject({ status: 'True', reason: 'ClusterReady' });
}

const kudJob = () =>
  cluster.kubeConfig
    .makeApiClient(BatchV1Api)
    .readNamespacedJob({ name: `kud-${name}`, namespace: functionsNamespace });
const jobLine = async () => (await kudJob()).spec?.template.spec?.containers[0]?.args?.[0] ?? '';
const consumerOf = async (bmh: string) =>
  (
    (await custom().getNamespacedCustomObject({
      group: 'metal3.io',
      version: 'v1alpha1',
      plural: 'baremetalhosts',
      namespace,
      name: bmh,
    })) as { spec?: { consumerRef?: { name?: string } } }
  ).spec?.consumerRef;

describe('grow and shrink a Ready cluster', () => {
  it('a worker added: scale.yml joins it; a worker removed: drained, remove-node.yml, its host released', async () => {
    await apply({
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Provisioning',
      metadata: { name, namespace, labels: { cluster: name } },
      spec: { masters: [entry(hosts.master)], workers: [entry(hosts.worker1)] },
    } as KubernetesObject);
    await readyFor(1);
    expect(await jobLine()).toMatch(new RegExp(`\\./installer --cluster ${name}$`));
    expect(await jobPodLog(cluster.kubeConfig, functionsNamespace, `kud-${name}`)).toContain(
      'PATH full install',
    );

    // Grow: the Job runs the scale path for the new worker only, not the full install.
    await readyFor(await setWorkers([hosts.worker1, hosts.worker2]));
    expect(await jobLine()).toMatch(new RegExp(`\\./installer --cluster ${name} --scale gs-worker-2$`));
    expect((await kudJob()).metadata?.annotations?.['bpa.akraino.org/kud-path']).toBe('scale');
    const scaleLog = await jobPodLog(cluster.kubeConfig, functionsNamespace, `kud-${name}`);
    expect(scaleLog).toContain('PATH scale: facts.yml, then scale.yml --limit gs-worker-2');
    expect(scaleLog).not.toContain('PATH full install');
    // The stand-in playbook (real ansible-playbook) reached the new worker, and its RECAP counts no failure.
    expect(scaleLog).toContain('ok: [gs-worker-2]');
    expect(scaleLog).toMatch(/gs-worker-2 +: ok=[1-9][0-9]* .*failed=0/);
    expect((await read()).status?.conditions?.find((c) => c.type === 'JobLaunched')?.message).toContain(
      'adding worker(s) gs-worker-2 with Kubespray scale.yml',
    );
    expect(await consumerOf(hosts.worker2.bmhName)).toMatchObject({ name });

    // The worker to remove, as the installed cluster (this API server) knows it: a Node and a pod.
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNode({ body: { metadata: { name: hosts.worker1.label } } });
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'on-worker-1' },
        spec: { nodeName: hosts.worker1.label, containers: [{ name: 'c', image: 'bpa.local/test/shell:1' }] },
      },
    });

    // The drain reads the published kubeconfig (a launch before it is published is retried).
    await waitFor(
      () =>
        core.readNamespacedSecret({ namespace, name: `${name}-admin-kubeconfig` }).then(
          () => true,
          () => undefined,
        ),
      { what: 'the kubeconfig Secret', timeoutMs: 120_000, intervalMs: 500 },
    );
    const secretName = `${name}-admin-kubeconfig`;
    const published = await core.readNamespacedSecret({ namespace, name: secretName });
    const edited = Buffer.from(
      Buffer.from(published.data!.value!, 'base64')
        .toString('utf8')
        .replace(/server: .*/, 'server: https://127.0.0.1:1'),
    ).toString('base64');
    await core.replaceNamespacedSecret({
      namespace,
      name: secretName,
      body: { ...published, data: { value: edited } },
    });
    published.metadata = { ...published.metadata, resourceVersion: undefined };
    // Shrink: drained through the published kubeconfig, then remove-node.yml with the node still in the inventory.
    const shrunk = await setWorkers([hosts.worker2]);
    // Resolved for the new spec, before any Job: the leaving worker is still a cluster member, so
    // its host stays claimed (retained), never free for another Provisioning before remove-node.
    const resolved = await waitFor(
      async () => {
        const live = await read();
        const done = live.status?.conditions?.find(
          (c) => c.type === 'HostsResolved' && c.observedGeneration === shrunk && c.status === 'True',
        );
        return done ? live : undefined;
      },
      { what: `HostsResolved of ${name} for generation ${shrunk}`, timeoutMs: 120_000, intervalMs: 200 },
    );
    expect(resolved.status?.retainedHosts?.map((h) => h.name)).toEqual([hosts.worker1.bmhName]);
    expect(await consumerOf(hosts.worker1.bmhName)).toMatchObject({ name });
    // The Secret was edited by the tenant (pointed elsewhere) before this shrink: the drain refuses
    // it, nothing is removed; restored, the shrink goes on.
    const refused = await waitFor(
      async () => {
        const found = (await read()).status?.conditions?.find(
          (c) => c.type === 'JobLaunched' && c.reason === 'DrainFailed',
        );
        return found?.message?.includes('is not the one the functions published') ? found : undefined;
      },
      { what: 'the drain refusing an edited kubeconfig', timeoutMs: 120_000, intervalMs: 200 },
    );
    expect(refused.status).toBe('Unknown');
    expect(await jobLine()).toMatch(/--scale gs-worker-2$/);
    await core.replaceNamespacedSecret({ namespace, name: secretName, body: published });
    await readyFor(shrunk);
    expect(await jobLine()).toMatch(new RegExp(`\\./installer --cluster ${name} --remove-node gs-worker-1$`));
    const removeLog = await jobPodLog(cluster.kubeConfig, functionsNamespace, `kud-${name}`);
    expect(removeLog).toContain(
      'PATH remove-node: remove-node.yml -e node=gs-worker-1 -e delete_nodes_confirmation=yes',
    );
    expect((await read()).status?.conditions?.find((c) => c.type === 'JobLaunched')?.message).toContain(
      'removing node(s) gs-worker-1 with Kubespray remove-node.yml (drained first)',
    );
    const node = await core.readNode({ name: hosts.worker1.label });
    expect(node.spec?.unschedulable).toBe(true);
    const evicted = await core.readNamespacedPod({ namespace, name: 'on-worker-1' }).then(
      (pod) => pod.metadata?.deletionTimestamp !== undefined,
      (error: unknown) => (isStatus(error, 404) ? true : Promise.reject(error)),
    );
    expect(evicted).toBe(true);
    // Its host is released once remove-node.yml has succeeded (contract section 12); the others stay claimed.
    expect(await consumerOf(hosts.worker1.bmhName)).toBeUndefined();
    expect(await consumerOf(hosts.worker2.bmhName)).toMatchObject({ name });
    expect((await read()).status?.claimedHosts?.map((h) => h.name).sort()).toEqual([
      hosts.master.bmhName,
      hosts.worker2.bmhName,
    ]);
    expect((await read()).status?.retainedHosts).toEqual([]);
    // The cluster's ConfigMap (what Software installs on) lists the nodes that remain.
    const configMap = await core.readNamespacedConfigMap({ namespace, name: `${name}-configmap` });
    expect(Object.keys(configMap.data ?? {}).sort()).toEqual(['MASTER_gs-master-1', 'WORKER_gs-worker-2']);
  }, 900_000);
});

/**
 * The new cluster's kubeconfig Secret (contract section 10), published for real on the
 * one-machine cluster: the stack's kud-job-launch launches the KUD Job, Kubernetes' own Job
 * controller runs it on the real node (local/kubelet-node: kubelet + containerd) from the
 * project's kud-stand-in image (the KUD installer STAND-IN, local/kud-stand-in: real
 * ansible-playbook reaches real OpenSSH hosts in network namespaces on the node's lab bridge; it
 * installs nothing), which writes a clearly marked admin.conf where KUD writes it, under the node's
 * hostPath /opt/kud/multi-cluster (the node's own /opt, read here through its holder's root), and
 * the publisher Job (kud-job-launch's own image, dist/bundle/kubeconfig-publisher.mjs in it) runs
 * in the functions' namespace with no API token and prints it as one framed line; kud-job-launch
 * reads that log, writes the Secret and deletes the publisher Job (docs/adr/0009). Nothing patches
 * a Job's status here. Starts its own cluster (its own node index). Needs root.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  Watch,
  type KubernetesObject,
  type V1Job,
  type V1Pod,
} from '@kubernetes/client-node';
import { applyObject, waitFor } from '../../../local/control-plane/index.js';
import type { LabHost } from '../../../local/lab/lab-definition.js';
import { createLabNetwork, type LabNetwork } from '../../../local/lab/lab-network.js';
import { startSshHosts, type SshHosts } from '../../../local/lab/openssh-hosts.js';
import type { Stack } from '../../../local/stack/index.js';
import { startStackCluster, type StackCluster } from '../../../local/stack/cluster.js';
import { startNodeLabStack } from '../../support/node.js';
import { startSlowAdmission } from '../../support/slow-admission.js';

let cluster: StackCluster;
let network: LabNetwork;
let sshd: SshHosts;
let stack: Stack;
let dir: string;
let namespace: string;
let functionsNamespace: string;
/** edge-k's host, edge-f's and edge-g's: a host serves one Provisioning at a time (contract section 12). */
let master: LabHost;
let second: LabHost;
let third: LabHost;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bpa-kubeconfig-node-'));
  cluster = await startStackCluster({ fallBack: false });
  network = await createLabNetwork(cluster.nodeNetwork!, [241, 242, 243]);
  const [a, b, c] = network.hosts as [LabNetwork['hosts'][0], LabNetwork['hosts'][0], LabNetwork['hosts'][0]];
  sshd = await startSshHosts({
    count: 3,
    addresses: [a.ip, b.ip, c.ip],
    netns: [a.netns, b.netns, c.netns],
    port: 22,
    username: 'root',
    behaviours: [{ kind: 'lab' }, { kind: 'lab' }, { kind: 'lab' }],
  });
  master = {
    label: 'master-1',
    role: 'master',
    bmhName: 'server-master-1',
    mac: '52:54:00:4c:00:01',
    ip: a.ip,
    inLeaseFile: true,
  };
  second = {
    label: 'master-2',
    role: 'master',
    bmhName: 'server-master-2',
    mac: '52:54:00:4c:00:02',
    ip: b.ip,
    inLeaseFile: true,
  };
  third = {
    label: 'master-3',
    role: 'master',
    bmhName: 'server-master-3',
    mac: '52:54:00:4c:00:03',
    ip: c.ip,
    inLeaseFile: true,
  };
  ({ namespace, functionsNamespace, stack } = await startNodeLabStack({
    cluster,
    hosts: [master, second, third],
    sshKey: sshd,
    dir,
    namespacePrefix: 'kubeconfig-node',
    // The Jobs' images as the real node holds them.
    functionsEnv: { ...cluster.functionsEnv, KUD_ACTIVE_DEADLINE_SECONDS: '120' },
  }));
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  await sshd?.stopAll();
  await network?.remove();
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

type Condition = { type: string; status: string; reason?: string; message?: string };
type Provisioning = KubernetesObject & {
  metadata?: { generation?: number; uid?: string };
  status?: {
    conditions?: Condition[];
    kubeconfigSecret?: string;
    kubeconfigSha256?: string;
    ownedObjects?: { kind: string; namespace: string; name: string; uid: string }[];
  };
};

function apply(object: KubernetesObject) {
  return applyObject(KubernetesObjectApi.makeApiClient(cluster.kubeConfig), object as never);
}

const provisioning = (name: string, host: LabHost = master): KubernetesObject =>
  ({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name, namespace, labels: { cluster: name } },
    spec: { masters: [{ [host.label]: { 'mac-address': host.mac } }] },
  }) as KubernetesObject;

const readProvisioning = async (name: string) =>
  (await cluster.kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
    group: 'bpa.akraino.org',
    version: 'v1alpha1',
    plural: 'provisionings',
    namespace,
    name,
  })) as Provisioning;

const conditionOf = (object: Provisioning, type: string) =>
  object.status?.conditions?.find((c) => c.type === type);

/** Waits for KubeconfigPublished to be decided (True or False). */
const kubeconfigPublished = (name: string) =>
  waitFor(
    async () => {
      const live = await readProvisioning(name);
      // A KUD Job that failed never gets a kubeconfig: its condition is the answer (and says why).
      const kud = conditionOf(live, 'KudInstalled');
      if (kud?.status === 'False') return { ...kud, type: 'KudInstalled' };
      const found = conditionOf(live, 'KubeconfigPublished');
      return found && found.status !== 'Unknown' ? found : undefined;
    },
    { what: `KubeconfigPublished of ${name} decided`, timeoutMs: 240_000, intervalMs: 500 },
  );

/**
 * Everything the API server said about the Jobs and pods of the functions' namespace while `body`
 * ran: the publisher is deleted once it has been read, so a watch is the only way to see it.
 */
async function watchingFunctionsNamespace<T>(body: () => Promise<T>) {
  const jobs = new Map<string, V1Job>();
  const pods = new Map<string, V1Pod>();
  const watch = new Watch(cluster.kubeConfig);
  const watches = await Promise.all([
    watch.watch(
      `/apis/batch/v1/namespaces/${functionsNamespace}/jobs`,
      {},
      (_t, job: V1Job) => void jobs.set(job.metadata!.name!, job),
      () => undefined,
    ),
    watch.watch(
      `/api/v1/namespaces/${functionsNamespace}/pods`,
      {},
      (_t, pod: V1Pod) => void pods.set(pod.metadata!.name!, pod),
      () => undefined,
    ),
  ]);
  try {
    return { result: await body(), jobs, pods };
  } finally {
    for (const w of watches) w.abort();
  }
}

const podsOfJob = (pods: Map<string, V1Pod>, job: V1Job | undefined) =>
  [...pods.values()].filter(
    (pod) =>
      job?.metadata?.uid && pod.metadata?.labels?.['batch.kubernetes.io/controller-uid'] === job.metadata.uid,
  );

describe('the kubeconfig Secret, published on the node', () => {
  it('a KUD Job that succeeds: admin.conf from the node is the Secret <cluster>-admin-kubeconfig (key value), owned by the Provisioning, named in status', async () => {
    const {
      result: published,
      jobs,
      pods,
    } = await watchingFunctionsNamespace(async () => {
      await apply(provisioning('edge-k'));
      return kubeconfigPublished('edge-k');
    });
    if (published.status !== 'True') {
      // What the publisher's pod went through, as the watch saw it: the condition alone does not
      // say whether the pod failed or its log lacked the line.
      const publisher = podsOfJob(pods, jobs.get('kud-edge-k-kubeconfig')).map((pod) => ({
        name: pod.metadata?.name,
        phase: pod.status?.phase,
        reason: pod.status?.reason,
        container: pod.status?.containerStatuses?.[0]?.state,
      }));
      throw new Error(
        `KubeconfigPublished is ${published.status} (${published.reason}): ${published.message}\n` +
          `publisher pods: ${JSON.stringify(publisher)}`,
      );
    }
    expect(published).toMatchObject({ status: 'True', reason: 'KubeconfigPublished' });
    const live = await readProvisioning('edge-k');
    expect(live.status?.kubeconfigSecret).toBe('edge-k-admin-kubeconfig');
    expect(conditionOf(live, 'Ready')).toMatchObject({ status: 'True' });

    // The bytes KUD's stand-in wrote on the node, in the node's mount namespace (its own /opt).
    const onNode = await readFile(
      `/proc/${cluster.kubeletNode!.sandboxPid}/root/opt/kud/multi-cluster/edge-k/artifacts/admin.conf`,
      'utf8',
    );
    expect(onNode).toContain('STAND-IN admin.conf');
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const secret = await core.readNamespacedSecret({ name: 'edge-k-admin-kubeconfig', namespace });
    expect(secret.type).toBe('cluster.x-k8s.io/secret');
    expect(Buffer.from(secret.data?.value ?? '', 'base64').toString('utf8')).toBe(onNode);
    expect(secret.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'Provisioning',
        name: 'edge-k',
        uid: live.metadata?.uid,
        controller: true,
      }),
    ]);
    // Ours by uid: recorded in the Provisioning's status when it was created.
    expect(live.status?.ownedObjects).toContainEqual({
      kind: 'Secret',
      namespace,
      name: 'edge-k-admin-kubeconfig',
      uid: secret.metadata?.uid,
    });

    // The publisher ran in the functions' namespace, on the node the KUD pod ran on, with no API
    // token, no host network and only the artifacts directory mounted read-only.
    const kudJob = jobs.get('kud-edge-k');
    const publisherJob = jobs.get('kud-edge-k-kubeconfig');
    expect(publisherJob?.metadata?.namespace).toBe(functionsNamespace);
    expect(publisherJob?.metadata?.labels).toMatchObject({
      cluster: 'edge-k',
      'bpa.akraino.org/provisioning-uid': live.metadata?.uid,
    });
    const [kudPod] = podsOfJob(pods, kudJob);
    const publisherPods = podsOfJob(pods, publisherJob);
    expect(publisherPods).toHaveLength(1);
    const publisherPod = publisherPods[0]!;
    expect(kudPod?.spec?.nodeName).toBeTruthy();
    expect(publisherPod.spec?.nodeName).toBe(kudPod?.spec?.nodeName);
    expect(publisherPod.spec?.automountServiceAccountToken).toBe(false);
    expect(JSON.stringify(publisherPod.spec?.volumes ?? [])).not.toContain('serviceAccountToken');
    expect(publisherPod.spec?.hostNetwork).toBeFalsy();
    expect(publisherJob?.spec?.template.spec?.containers[0]?.volumeMounts).toEqual([
      expect.objectContaining({ readOnly: true }),
    ]);

    // Read and gone: the publisher Job (with its pod and the log that held the credential) is
    // deleted once the Secret is written.
    await waitFor(
      async () => {
        const left = await cluster.kubeConfig
          .makeApiClient(BatchV1Api)
          .readNamespacedJob({ name: 'kud-edge-k-kubeconfig', namespace: functionsNamespace })
          .then(
            () => undefined,
            (error: { code?: number }) => (error.code === 404 ? true : undefined),
          );
        return left;
      },
      { what: 'the publisher Job deleted', timeoutMs: 60_000, intervalMs: 500 },
    );
    // No per-cluster ServiceAccount, Role or RoleBinding for it any more (ADR 0009, revised).
    const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    for (const at of [namespace, functionsNamespace]) {
      await expect(
        core.readNamespacedServiceAccount({ name: 'kud-edge-k-kubeconfig', namespace: at }),
      ).rejects.toMatchObject({ code: 404 });
      await expect(
        rbac.readNamespacedRole({ name: 'kud-edge-k-kubeconfig', namespace: at }),
      ).rejects.toMatchObject({
        code: 404,
      });
      await expect(
        rbac.readNamespacedRoleBinding({ name: 'kud-edge-k-kubeconfig', namespace: at }),
      ).rejects.toMatchObject({ code: 404 });
    }

    // The credentials never reach the functions' log or an Event (the publisher's own log held
    // them, by design, until its deletion above).
    const events = [
      ...(await core.listNamespacedEvent({ namespace })).items,
      ...(await core.listNamespacedEvent({ namespace: functionsNamespace })).items,
    ];
    const stackLog = await readFile(join(dir, 'stack.log'), 'utf8');
    for (const text of [stackLog, ...events.map((e) => e.message ?? '')]) {
      expect(text).not.toContain('STAND-IN admin.conf');
      expect(text).not.toContain(secret.data?.value ?? 'no value');
    }
    expect(JSON.stringify(live.status)).not.toContain(secret.data?.value ?? 'no value');
  }, 300_000);

  it('a Secret of that name the functions did not create: ObjectConflict, left untouched, no publisher', async () => {
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'edge-f-admin-kubeconfig' }, stringData: { value: 'mine' } },
    });
    const { result: published, jobs } = await watchingFunctionsNamespace(async () => {
      await apply(provisioning('edge-f', second));
      return kubeconfigPublished('edge-f');
    });
    expect(published).toMatchObject({ status: 'False', reason: 'ObjectConflict' });
    expect(published.message).toContain(`Secret ${namespace}/edge-f-admin-kubeconfig already exists`);
    const live = await readProvisioning('edge-f');
    expect(conditionOf(live, 'Ready')).toMatchObject({ status: 'True' });
    expect(live.status?.kubeconfigSecret).toBeUndefined();
    const secret = await core.readNamespacedSecret({ name: 'edge-f-admin-kubeconfig', namespace });
    expect(Buffer.from(secret.data?.value ?? '', 'base64').toString()).toBe('mine');
    expect(secret.metadata?.ownerReferences).toBeUndefined();
    // Nothing printed the credential for a Secret it could not be written to.
    expect(jobs.has('kud-edge-f')).toBe(true);
    expect(jobs.has('kud-edge-f-kubeconfig')).toBe(false);
  }, 300_000);
  it('a spec change while the kubeconfig is being published: the Secret is written and its digest recorded all the same', async () => {
    // The test's webhook changes the spec exactly when kud-job-launch creates the Secret, so the
    // step's status write that follows is for a generation that is gone (stale). The new spec
    // names a host nobody has: generation 2 stops at HostsResolved, no publisher of its own runs,
    // so only this publication can record the digest the next drain compares the Secret with.
    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const admission = await startSlowAdmission(cluster.kubeConfig, {
      name: `kubeconfig-secret-${namespace}`,
      namespaces: [namespace],
      holdMs: 0,
      resource: { apiGroup: '', version: 'v1', resource: 'secrets' },
      onFirstCreate: async ({ name }) => {
        if (name !== 'edge-g-admin-kubeconfig') return;
        await custom.patchNamespacedCustomObject(
          {
            group: 'bpa.akraino.org',
            version: 'v1alpha1',
            plural: 'provisionings',
            namespace,
            name: 'edge-g',
            body: { spec: { workers: [{ 'worker-x': { 'mac-address': '52:54:00:4c:00:99' } }] } },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      },
    });
    try {
      await apply(provisioning('edge-g', third));
      const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
      const recorded = await waitFor(
        async () => {
          const live = await readProvisioning('edge-g');
          return live.status?.kubeconfigSha256 ? live : undefined;
        },
        { what: 'the digest of edge-g-admin-kubeconfig in status', timeoutMs: 240_000, intervalMs: 500 },
      );
      expect(admission.admitted.map((a) => a.name)).toContain('edge-g-admin-kubeconfig');
      expect(recorded.metadata?.generation).toBe(2);
      const secret = await core.readNamespacedSecret({ name: 'edge-g-admin-kubeconfig', namespace });
      const adminConf = Buffer.from(secret.data?.value ?? '', 'base64');
      expect(adminConf.toString('utf8')).toContain('STAND-IN admin.conf');
      expect(recorded.status?.kubeconfigSha256).toBe(createHash('sha256').update(adminConf).digest('hex'));
      expect(recorded.status?.kubeconfigSecret).toBe('edge-g-admin-kubeconfig');
      // Generation 1's step was never recorded (stale), and generation 2 never gets that far.
      expect(conditionOf(recorded, 'KubeconfigPublished')?.status ?? 'Unknown').toBe('Unknown');
    } finally {
      await admission.stop();
    }
  }, 300_000);
});

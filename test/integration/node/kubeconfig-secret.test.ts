/**
 * The new cluster's kubeconfig Secret (contract section 10), published for real on the
 * one-machine cluster: the stack's kud-job-launch launches the KUD Job, Kubernetes' own Job
 * controller runs it on the node (OUR IMITATION of a kubelet: pods are local processes), the KUD
 * installer STAND-IN (local/kud-stand-in: real Ansible pings real OpenSSH hosts in network
 * namespaces; it installs nothing) writes a clearly marked admin.conf where KUD writes it, under
 * the node's hostPath, and the publisher Job (the functions' own image, mapped by
 * local/node/images.yaml to dist/bundle/kubeconfig-publisher.mjs) copies it into the Secret with
 * its own ServiceAccount, which the real API server's RBAC lets update that one Secret only.
 * Nothing patches a Job's status here. Starts its own cluster (its own slot). Needs root.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  AuthorizationV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { applyObject, waitFor } from '../../../local/control-plane/index.js';
import type { LabHost } from '../../../local/lab/lab-definition.js';
import { createLabNetwork, type LabNetwork } from '../../../local/lab/lab-network.js';
import { startSshHosts, type SshHosts } from '../../../local/lab/openssh-hosts.js';
import type { Stack } from '../../../local/stack.js';
import { startStackCluster, type StackCluster } from '../../../local/stack/cluster.js';
import { startNodeLabStack } from '../../support/node.js';

const run = promisify(execFile);

let cluster: StackCluster;
let network: LabNetwork;
let sshd: SshHosts;
let stack: Stack;
let dir: string;
let namespace: string;
let master: LabHost;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bpa-kubeconfig-node-'));
  cluster = await startStackCluster({ fallBack: false });
  network = await createLabNetwork(cluster.nodeNetwork!, [241]);
  const [a] = network.hosts as [LabNetwork['hosts'][0]];
  sshd = await startSshHosts({
    count: 1,
    addresses: [a.ip],
    netns: [a.netns],
    port: 22,
    username: 'root',
    behaviours: [{ kind: 'lab' }],
  });
  master = {
    label: 'master-1',
    role: 'master',
    bmhName: 'server-master-1',
    mac: '52:54:00:4c:00:01',
    ip: a.ip,
    inLeaseFile: true,
  };
  ({ namespace, stack } = await startNodeLabStack({
    cluster,
    hosts: [master],
    sshKey: sshd,
    dir,
    namespacePrefix: 'kubeconfig-node',
    functionsEnv: { KUD_ACTIVE_DEADLINE_SECONDS: '120' },
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
  status?: { conditions?: Condition[]; kubeconfigSecret?: string };
};

function apply(object: KubernetesObject) {
  return applyObject(KubernetesObjectApi.makeApiClient(cluster.kubeConfig), object as never);
}

const provisioning = (name: string): KubernetesObject =>
  ({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name, namespace, labels: { cluster: name } },
    spec: { masters: [{ [master.label]: { 'mac-address': master.mac } }] },
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
      const found = conditionOf(await readProvisioning(name), 'KubeconfigPublished');
      return found && found.status !== 'Unknown' ? found : undefined;
    },
    { what: `KubeconfigPublished of ${name} decided`, timeoutMs: 240_000, intervalMs: 500 },
  );

const podOf = async (jobName: string) => {
  const pods = await cluster.kubeConfig
    .makeApiClient(CoreV1Api)
    .listNamespacedPod({ namespace, labelSelector: `job-name=${jobName}` });
  expect(pods.items).toHaveLength(1);
  return pods.items[0]!;
};

const canI = async (verb: string, name: string | undefined, serviceAccount: string) => {
  const review = await cluster.kubeConfig.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
    body: {
      spec: {
        user: `system:serviceaccount:${namespace}:${serviceAccount}`,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
        resourceAttributes: { namespace, verb, resource: 'secrets', ...(name ? { name } : {}) },
      },
    },
  });
  return review.status?.allowed === true;
};

describe('the kubeconfig Secret, published on the node', () => {
  it('a KUD Job that succeeds: admin.conf from the node is the Secret <cluster>-admin-kubeconfig (key value), owned by the Provisioning, named in status', async () => {
    await apply(provisioning('edge-k'));
    const published = await kubeconfigPublished('edge-k');
    expect(published).toMatchObject({ status: 'True', reason: 'KubeconfigPublished' });
    const live = await readProvisioning('edge-k');
    expect(live.status?.kubeconfigSecret).toBe('edge-k-admin-kubeconfig');
    expect(conditionOf(live, 'Ready')).toMatchObject({ status: 'True' });

    // The bytes KUD's stand-in wrote on the node, under the node's hostPath root.
    const onNode = await readFile(
      join(cluster.node!.workDir, 'host-paths/opt/kud/multi-cluster/edge-k/artifacts/admin.conf'),
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

    // The publisher ran on the node the KUD pod ran on, as its own ServiceAccount.
    const kudPod = await podOf('kud-edge-k');
    const publisherPod = await podOf('kud-edge-k-kubeconfig');
    expect(publisherPod.spec?.nodeName).toBe(kudPod.spec?.nodeName);
    expect(publisherPod.spec?.serviceAccountName).toBe('kud-edge-k-kubeconfig');
    expect(publisherPod.spec?.hostNetwork).toBeFalsy();
    const job = await cluster.kubeConfig
      .makeApiClient(BatchV1Api)
      .readNamespacedJob({ name: 'kud-edge-k-kubeconfig', namespace });
    expect(job.spec?.template.spec?.containers[0]?.volumeMounts).toEqual([
      expect.objectContaining({ readOnly: true }),
    ]);

    // That ServiceAccount may read and update this one Secret, and create or touch no other.
    expect(await canI('update', 'edge-k-admin-kubeconfig', 'kud-edge-k-kubeconfig')).toBe(true);
    expect(await canI('update', 'ssh-key-secret', 'kud-edge-k-kubeconfig')).toBe(false);
    expect(await canI('get', 'ssh-key-secret', 'kud-edge-k-kubeconfig')).toBe(false);
    expect(await canI('create', undefined, 'kud-edge-k-kubeconfig')).toBe(false);
    expect(await canI('list', undefined, 'kud-edge-k-kubeconfig')).toBe(false);

    // The credentials never reach a log or an Event: the publisher's log names the Secret only.
    const log = (
      await run(
        'kubectl',
        ['--kubeconfig', cluster.kubeconfigPath, '-n', namespace, 'logs', 'job/kud-edge-k-kubeconfig'],
        { timeout: 60_000 },
      )
    ).stdout;
    expect(log).toContain('"msg":"kubeconfig published"');
    expect(log).toContain(`"secret":"${namespace}/edge-k-admin-kubeconfig"`);
    const events = await core.listNamespacedEvent({ namespace });
    const stackLog = await readFile(join(dir, 'stack.log'), 'utf8');
    for (const text of [log, stackLog, ...events.items.map((e) => e.message ?? '')]) {
      expect(text).not.toContain('STAND-IN admin.conf');
      expect(text).not.toContain(secret.data?.value ?? 'no value');
    }
  }, 300_000);

  it('a Secret of that name the functions did not create: ObjectConflict, left untouched, no publisher', async () => {
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'edge-f-admin-kubeconfig' }, stringData: { value: 'mine' } },
    });
    await apply(provisioning('edge-f'));
    const published = await kubeconfigPublished('edge-f');
    expect(published).toMatchObject({ status: 'False', reason: 'ObjectConflict' });
    expect(published.message).toContain(`Secret ${namespace}/edge-f-admin-kubeconfig already exists`);
    const live = await readProvisioning('edge-f');
    expect(conditionOf(live, 'Ready')).toMatchObject({ status: 'True' });
    expect(live.status?.kubeconfigSecret).toBeUndefined();
    const secret = await core.readNamespacedSecret({ name: 'edge-f-admin-kubeconfig', namespace });
    expect(Buffer.from(secret.data?.value ?? '', 'base64').toString()).toBe('mine');
    expect(secret.metadata?.ownerReferences).toBeUndefined();
    await expect(
      cluster.kubeConfig
        .makeApiClient(BatchV1Api)
        .readNamespacedJob({ name: 'kud-edge-f-kubeconfig', namespace }),
    ).rejects.toMatchObject({ code: 404 });
  }, 300_000);
});

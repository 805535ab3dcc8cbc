/**
 * A Software's lifecycle (contract section 11) through software-install's function server against
 * the real kube-apiserver and real OpenSSH hosts (recording the command, test/support/sshd.ts):
 * gating on the Provisioning's Ready for its current generation, new nodes after a re-provision,
 * the retry annotation, and forget-host-keys.
 */
import { CloudEvent } from 'cloudevents';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { definition as softwareInstall } from '../../../functions/software-install/index.js';
import { EventTypes } from '../../../shared/events/types.js';
import { useTestCluster } from '../../support/cluster.js';
import { type SshHosts, type SshTestHost } from '../../support/sshd.js';
import { startNodeSshHosts } from '../../support/node-lab-hosts.js';
import { ChainHarness, replyTypes, sourceEvent } from './support/chain-harness.js';
import {
  bpaGroup,
  createProvisioning,
  provisioningObject,
  readProvisioning,
  writeProvisioningStatus,
} from './support/fixtures.js';

const cluster = useTestCluster();

interface StoredSoftware {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    generation: number;
    uid: string;
    annotations?: Record<string, string>;
  };
  spec: Record<string, unknown>;
  status?: {
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    hosts?: {
      node: string;
      ip: string;
      exitCode: number | null;
      error?: string;
      hostKeyFingerprint?: string;
    }[];
    installedNodes?: { node: string; ip: string }[];
    retry?: string;
    hostKeysForgotten?: string;
  };
}

let lab: SshHosts;
let hosts: SshTestHost[];
let harness: ChainHarness;
const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);

const readSoftware = async (name: string) =>
  (await custom().getNamespacedCustomObject({
    ...bpaGroup,
    plural: 'softwares',
    namespace: cluster.namespace,
    name,
  })) as StoredSoftware;
const condition = (software: StoredSoftware, type: string) =>
  software.status?.conditions?.find((c) => c.type === type);
async function createSoftware(name: string, clusterName: string, spec: Record<string, unknown>) {
  return (await custom().createNamespacedCustomObject({
    ...bpaGroup,
    plural: 'softwares',
    namespace: cluster.namespace,
    body: {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Software',
      metadata: { name, namespace: cluster.namespace, labels: { cluster: clusterName } },
      spec,
    },
  })) as StoredSoftware;
}
async function annotate(name: string, annotations: Record<string, string>) {
  const live = await readSoftware(name);
  return (await custom().replaceNamespacedCustomObject({
    ...bpaGroup,
    plural: 'softwares',
    namespace: cluster.namespace,
    name,
    body: {
      ...live,
      metadata: { ...live.metadata, annotations: { ...live.metadata.annotations, ...annotations } },
    },
  })) as StoredSoftware;
}
/** What software-install receives when the Software changes (its own status writes included). */
const changed = async (name: string) => harness.publish(sourceEvent('update', await readSoftware(name)));

/** A Provisioning with its node ConfigMap, Ready or not for its current generation. */
async function provisionCluster(name: string, nodes: Record<string, string>, ready: boolean) {
  const masters = Object.keys(nodes)
    .filter((key) => key.startsWith('MASTER_'))
    .map((key, index) => ({ label: key.slice(7), mac: `aa:bb:cc:00:09:${String(index).padStart(2, '0')}` }));
  await createProvisioning(
    cluster.kubeConfig,
    provisioningObject({ name, namespace: cluster.namespace, cluster: name, masters, workers: [] }),
  );
  await setReady(name, ready);
  await core().createNamespacedConfigMap({
    namespace: cluster.namespace,
    body: { metadata: { name: `${name}-configmap`, labels: { cluster: name } }, data: nodes },
  });
}
const setReady = (name: string, ready: boolean) =>
  writeProvisioningStatus(cluster.kubeConfig, cluster.namespace, name, {
    conditions: [
      ready
        ? { type: 'Ready', status: 'True', reason: 'ClusterReady', message: `${name} is ready` }
        : { type: 'Ready', status: 'Unknown', reason: 'Provisioning', message: 'KUD is installing' },
    ],
  });

async function clusterReady(name: string, nodes: Record<string, string>) {
  const provisioning = await readProvisioning(cluster.kubeConfig, cluster.namespace, name);
  return new CloudEvent<unknown>({
    type: EventTypes.clusterReady,
    source: 'kud-job-launch',
    subject: `namespaces/${cluster.namespace}/provisionings/${name}`,
    datacontenttype: 'application/json',
    cluster: name,
    data: {
      provisioning: {
        namespace: cluster.namespace,
        name,
        uid: provisioning.metadata.uid,
        generation: provisioning.metadata.generation,
      },
      cluster: name,
      configMap: `${name}-configmap`,
      nodes: Object.entries(nodes).map(([key, ip], index) => ({
        label: key.replace(/^(MASTER|WORKER)_/, ''),
        roles: [key.startsWith('MASTER_') ? 'master' : 'worker'],
        mac: `aa:bb:cc:00:0a:${String(index).padStart(2, '0')}`,
        ip,
        source: 'host-nics',
      })),
    },
  });
}

beforeAll(async () => {
  lab = await startNodeSshHosts({ count: 3 });
  hosts = lab.hosts;
  await core().createNamespacedSecret({
    namespace: cluster.namespace,
    body: {
      metadata: { name: 'ssh-key-secret' },
      data: { id_rsa: Buffer.from(lab.privateKey).toString('base64') },
    },
  });
  harness = new ChainHarness(cluster.kubeConfig, {
    SSH_USER: lab.username,
    SSH_PORT: String(lab.port),
    SSH_CONNECT_TIMEOUT_SECONDS: '30',
    SSH_TIMEOUT_SECONDS: '30',
    INSTALL_RETRY_DELAY_SECONDS: '0',
  });
  await harness.start([softwareInstall]);
}, 120_000);
afterAll(async () => {
  await harness?.stop();
  await lab?.stopAll();
});

const ip = (index: number) => (hosts[index] as SshTestHost).ip;

it('waits while the Provisioning is not Ready for its current generation, though the ConfigMap exists', async () => {
  const nodes = { MASTER_g1: ip(0) };
  await provisionCluster('gated', nodes, false);
  await createSoftware('gated-tools', 'gated', { masterSoftware: ['htop'] });
  await changed('gated-tools');
  const waiting = await readSoftware('gated-tools');
  expect(condition(waiting, 'Ready')).toMatchObject({ status: 'False', reason: 'ClusterNotReady' });
  expect(condition(waiting, 'Ready')?.message).toMatch(
    /Provisioning .*\/gated is Ready=Unknown \(Provisioning\) for generation 1/,
  );
  expect(hosts[0]?.commands()).toEqual([]);

  await setReady('gated', true);
  const deliveries = await harness.publish(await clusterReady('gated', nodes));
  // With each host's error beside it: a failure says why.
  const errors = (await readSoftware('gated-tools')).status?.hosts?.map((h) => h.error ?? 'ok');
  expect({ replies: replyTypes(deliveries), errors }).toEqual({
    replies: [EventTypes.softwareInstalled],
    errors: ['ok'],
  });
  expect(condition(await readSoftware('gated-tools'), 'Ready')).toMatchObject({ status: 'True' });
  expect(hosts[0]?.commands()).toHaveLength(1);
});

it('a re-provisioned cluster with a new worker: the packages go there too, once', async () => {
  const before = { MASTER_r1: ip(0) };
  await provisionCluster('grown', before, true);
  await createSoftware('grown-tools', 'grown', { masterSoftware: ['htop'], workerSoftware: ['jq'] });
  await changed('grown-tools');
  expect((await readSoftware('grown-tools')).status?.installedNodes).toEqual([{ node: 'r1', ip: ip(0) }]);
  const counts = () => hosts.map((h) => h.commands().length);
  const start = counts();

  // Re-provision: a new spec generation, not Ready while KUD runs, the ConfigMap rewritten.
  const provisioning = await readProvisioning(cluster.kubeConfig, cluster.namespace, 'grown');
  await custom().replaceNamespacedCustomObject({
    ...bpaGroup,
    plural: 'provisionings',
    namespace: cluster.namespace,
    name: 'grown',
    body: {
      ...provisioning,
      spec: { ...provisioning.spec, workers: [{ r2: { 'mac-address': 'aa:bb:cc:00:0b:01' } }] },
    },
  });
  const after = { MASTER_r1: ip(0), WORKER_r2: ip(1) };
  await core().replaceNamespacedConfigMap({
    name: 'grown-configmap',
    namespace: cluster.namespace,
    body: { metadata: { name: 'grown-configmap', labels: { cluster: 'grown' } }, data: after },
  });
  // Meanwhile the Software's own update: nothing happens while the cluster is not Ready.
  await changed('grown-tools');
  expect(counts()).toEqual(start);

  await setReady('grown', true);
  const deliveries = await harness.publish(await clusterReady('grown', after));
  expect(replyTypes(deliveries)).toEqual([EventTypes.softwareInstalled]);
  expect(hosts[1]?.commands().at(-1)).toContain("'jq'");
  const stored = await readSoftware('grown-tools');
  expect(stored.status?.installedNodes).toEqual([
    { node: 'r1', ip: ip(0) },
    { node: 'r2', ip: ip(1) },
  ]);
  expect(stored.status?.hosts?.map((h) => h.node)).toEqual(['r1', 'r2']);
  // Nothing new since: a replay of cluster.ready or of the Software installs nothing.
  const done = counts();
  await harness.publish(await clusterReady('grown', after));
  await changed('grown-tools');
  expect(counts()).toEqual(done);
});

it('bpa.akraino.org/retry re-runs a failed install, once per value', async () => {
  await provisionCluster('retried', { MASTER_t1: ip(2) }, true);
  await lab.setBehaviour(ip(2), { kind: 'fail', exitCode: 100, stderr: 'E: Unable to fetch some archives' });
  await createSoftware('retried-tools', 'retried', { masterSoftware: ['htop'] });
  expect(replyTypes(await changed('retried-tools'))).toEqual([EventTypes.softwareFailed]);
  expect(condition(await readSoftware('retried-tools'), 'Ready')).toMatchObject({ reason: 'InstallFailed' });
  const attempts = hosts[2]?.commands().length ?? 0;
  // Failed for good: its own updates do not re-run it.
  await changed('retried-tools');
  expect(hosts[2]?.commands()).toHaveLength(attempts);

  await lab.setBehaviour(ip(2), { kind: 'succeed' });
  await annotate('retried-tools', { 'bpa.akraino.org/retry': '1' });
  expect(replyTypes(await changed('retried-tools'))).toEqual([EventTypes.softwareInstalled]);
  const stored = await readSoftware('retried-tools');
  expect(condition(stored, 'Ready')).toMatchObject({ status: 'True' });
  expect(stored.status?.retry).toBe('1');
  // The same value again (any later update) re-runs nothing.
  await changed('retried-tools');
  expect(hosts[2]?.commands()).toHaveLength(attempts + 1);
});

it('bpa.akraino.org/forget-host-keys drops a reimaged host’s pinned key (Normal Event); nothing else does', async () => {
  await provisionCluster('rekeyed', { MASTER_k1: ip(1) }, true);
  await createSoftware('rekeyed-tools', 'rekeyed', { masterSoftware: ['htop'] });
  await changed('rekeyed-tools');
  const pinned = (await readSoftware('rekeyed-tools')).status?.hosts?.[0]?.hostKeyFingerprint;
  expect(pinned).toBe(hosts[1]?.hostKeyFingerprint);

  await lab.changeHostKey(ip(1));
  await annotate('rekeyed-tools', { 'bpa.akraino.org/retry': 'after-reimage' });
  await changed('rekeyed-tools');
  let stored = await readSoftware('rekeyed-tools');
  expect(condition(stored, 'Ready')).toMatchObject({ status: 'False', reason: 'InstallFailed' });
  expect(stored.status?.hosts?.[0]?.error).toMatch(/host key has changed/);
  expect(stored.status?.hosts?.[0]?.hostKeyFingerprint).toBe(pinned);

  await annotate('rekeyed-tools', { 'bpa.akraino.org/forget-host-keys': `${ip(1)}, not-an-ip` });
  expect(replyTypes(await changed('rekeyed-tools'))).toEqual([EventTypes.softwareInstalled]);
  stored = await readSoftware('rekeyed-tools');
  expect(stored.status?.hosts?.[0]?.hostKeyFingerprint).toBe(hosts[1]?.hostKeyFingerprint);
  expect(stored.status?.hosts?.[0]?.hostKeyFingerprint).not.toBe(pinned);
  expect(stored.status?.hostKeysForgotten).toBe(`${ip(1)}, not-an-ip`);
  const events = await core().listNamespacedEvent({
    namespace: cluster.namespace,
    fieldSelector: 'involvedObject.name=rekeyed-tools,reason=HostKeysForgotten',
  });
  expect(events.items.map((e) => [e.type, e.message])).toEqual([
    [
      'Normal',
      `Forgot the pinned host keys of ${ip(1)} (bpa.akraino.org/forget-host-keys); their next key is trusted on first use; ignored (not IP addresses): not-an-ip`,
    ],
  ]);
});

/**
 * Contract section 14, the pause, on the real API server: `bpa.akraino.org/paused` on a
 * Provisioning or a Software stops every function (its events and its sweep) until it is
 * removed; status says so (Paused True, one Event per transition) and the resume re-drives the
 * chain from the annotation's own update event, without waiting for a sweep. The functions run
 * behind their real HTTP servers (support/chain-harness.ts); the GitOps verdicts come from the
 * real kstatus library, Flux's CEL and Argo CD's Lua (test/integration/gitops/gitops-check.ts).
 *
 * Imitations, said here: no node, so no Job's pod runs (a launched Job is only looked at); the
 * Software's cluster is a Provisioning whose Ready status the test writes (fixtures.ts), and its
 * host a recording OpenSSH server (test/support/sshd.ts) that the install Job never reaches.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../../functions/software-install/index.js';
import { pausedAnnotation } from '../../../shared/core/lifecycle-names.js';
import { chainEvent } from '../../../shared/cloudevents/chain-event.js';
import { EventTypes, provisioningSubject } from '../../../shared/events/types.js';
import { useTestCluster } from '../../support/cluster.js';
import { createKudSshKeySecret } from '../../support/node.js';
import { startSshHosts, type SshHosts } from '../../support/sshd.js';
import { judgeOne } from '../gitops/gitops-check.js';
import { ChainHarness, pingEvent, sourceEvent } from './support/chain-harness.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  createReadyProvisioning,
  createSoftware,
  provisioningObject,
  type StoredProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster({ namespacePrefix: 'pause' });
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
const batch = () => cluster.kubeConfig.makeApiClient(BatchV1Api);
const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
const ns = () => cluster.namespace;

type Stored = StoredProvisioning & {
  metadata: { annotations?: Record<string, string>; deletionTimestamp?: string; finalizers?: string[] };
};
const read = async (plural: string, name: string) =>
  (await custom().getNamespacedCustomObject({ ...bpaGroup, plural, namespace: ns(), name })) as Stored;
/** Sets (a string) or removes (null) the annotation, as `kubectl annotate` does. */
const annotate = async (plural: string, name: string, value: string | null) =>
  (await custom().patchNamespacedCustomObject(
    {
      ...bpaGroup,
      plural,
      namespace: ns(),
      name,
      body: { metadata: { annotations: { [pausedAnnotation]: value } } },
    },
    mergePatch,
  )) as Stored;
/** The Events about `name` with `reason`, and how often each was counted. */
const eventCount = async (name: string, reason: string) => {
  const list = await core().listNamespacedEvent({
    namespace: ns(),
    fieldSelector: `involvedObject.name=${name},reason=${reason}`,
  });
  return list.items.reduce((sum, event) => sum + (event.count ?? 1), 0);
};

describe('a paused Provisioning', () => {
  let harness: ChainHarness;
  const cleanupTimeoutSeconds = 4;
  const mac = (i: number) => `dd:00:00:00:0b:${String(i).padStart(2, '0')}`;
  const hostOf = async (i: number) =>
    (await custom().getNamespacedCustomObject({
      group: 'metal3.io',
      version: 'v1alpha1',
      plural: 'baremetalhosts',
      namespace: ns(),
      name: `pz-${i}`,
    })) as { spec: { consumerRef?: unknown } };
  const jobs = async (name: string) =>
    (await batch().listJobForAllNamespaces({ labelSelector: `cluster=${name}` })).items.filter(
      (job) => job.metadata?.name === `kud-${name}`,
    );
  const cleanupJobs = async (name: string) =>
    (await batch().listJobForAllNamespaces({ labelSelector: `cluster=${name}` })).items.filter(
      (job) => job.metadata?.name !== `kud-${name}` && job.metadata?.name?.includes('cleanup'),
    );
  /** One sweep of `target`; what it sent about Provisioning `name`. */
  const ping = async (target: string, name: string) => {
    expect((await harness.deliver(target, pingEvent())).status).toBe(204);
    return harness.collector
      .drain()
      .filter((event) => (event.data as { provisioning?: { name?: string } }).provisioning?.name === name);
  };

  beforeAll(async () => {
    for (let i = 1; i <= 2; i++)
      await createBareMetalHost(cluster.kubeConfig, {
        name: `pz-${i}`,
        namespace: ns(),
        bootMac: mac(i),
        nics: [{ name: 'eth0', mac: mac(i), ip: `10.42.0.${i}` }],
      });
    await createKudSshKeySecret(cluster.kubeConfig, ns());
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: ns(),
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: ns(),
      KUD_IMAGE: 'bpa.local/test/kud-waits:1',
      // Short, so that a pause outlasts it (the deletion test).
      CLEANUP_TIMEOUT_SECONDS: String(cleanupTimeoutSeconds),
    });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
  });
  afterAll(() => harness?.stop());

  it('paused before its Job launches: nothing is launched, status says Paused; resumed: the chain goes on to JobLaunched', async () => {
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'mid',
        namespace: ns(),
        cluster: 'mid',
        masters: [{ label: 'm', mac: mac(1) }],
      }),
    );
    // The chain up to the inventory, one step at a time; then the pause, before kud-job-launch.
    const resolved = await harness.deliver('host-lookup', sourceEvent('add', created));
    expect(resolved.reply?.type).toBe(EventTypes.hostsResolved);
    const rendered = await harness.deliver('inventory-render', resolved.reply as never);
    expect(rendered.reply?.type).toBe(EventTypes.inventoryRendered);
    const paused = await annotate('provisionings', 'mid', 'true');

    const launch = await harness.deliver('kud-job-launch', rendered.reply as never);
    expect(launch.status).toBe(204);
    expect(launch.reply).toBeUndefined();
    expect(await jobs('mid')).toEqual([]);
    let stored = await read('provisionings', 'mid');
    expect(conditionOf(stored, 'Paused')).toMatchObject({
      status: 'True',
      reason: 'Paused',
      observedGeneration: 1,
    });
    expect(conditionOf(stored, 'Paused')?.message).toContain(pausedAnnotation);
    expect(conditionOf(stored, 'JobLaunched')).toBeUndefined();
    // Ready is left as it was; kstatus, Flux and Argo CD read it as in progress, with the pause.
    expect(conditionOf(stored, 'Ready')).toMatchObject({ status: 'Unknown', reason: 'Provisioning' });
    expect(conditionOf(stored, 'Reconciling')).toMatchObject({ status: 'True', reason: 'Paused' });
    const verdict = judgeOne(stored);
    expect([verdict.kstatus.status, verdict.flux?.status, verdict.argo?.status]).toEqual([
      'InProgress',
      'InProgress',
      'Progressing',
    ]);
    expect(verdict.argo?.message).toContain('Paused');

    // The annotation's own update event, the status write's echo, the event delivered again, and
    // every sweep: nothing acts, nothing is sent, and the Event is not repeated.
    const echoes = await harness.publish(sourceEvent('update', paused));
    expect(echoes.map((d) => d.reply)).toEqual([undefined]);
    await harness.publish(sourceEvent('update', stored));
    expect((await harness.deliver('kud-job-launch', rendered.reply as never)).reply).toBeUndefined();
    expect(await ping('host-lookup', 'mid')).toEqual([]);
    expect(await ping('kud-job-launch', 'mid')).toEqual([]);
    expect(await jobs('mid')).toEqual([]);
    expect(await eventCount('mid', 'Paused')).toBe(1);

    // Resumed: the update event that removes the annotation re-drives the chain at once.
    const resumed = await annotate('provisionings', 'mid', null);
    const after = await harness.publish(sourceEvent('update', resumed));
    expect(after.map((d) => d.reply?.type)).toEqual([
      EventTypes.inventoryRendered,
      EventTypes.kudJobLaunched,
    ]);
    expect(await jobs('mid')).toHaveLength(1);
    stored = await read('provisionings', 'mid');
    expect(conditionOf(stored, 'JobLaunched')).toMatchObject({ status: 'True' });
    expect(conditionOf(stored, 'Paused')).toMatchObject({ status: 'False', reason: 'Resumed' });
    expect(conditionOf(stored, 'Reconciling')?.reason).not.toBe('Paused');
    expect(await eventCount('mid', 'Resumed')).toBe(1);
    expect(await eventCount('mid', 'Paused')).toBe(1);
  });

  it('created paused: no host is claimed or resolved until the annotation goes', async () => {
    const object = provisioningObject({
      name: 'born',
      namespace: ns(),
      cluster: 'born',
      masters: [{ label: 'm', mac: mac(2) }],
    });
    const created = await createProvisioning(cluster.kubeConfig, {
      ...object,
      metadata: { ...object.metadata, annotations: { [pausedAnnotation]: '' } } as typeof object.metadata,
    });
    const deliveries = await harness.publish(sourceEvent('add', created));
    expect(deliveries.map((d) => d.reply)).toEqual([undefined]);
    expect(await ping('host-lookup', 'born')).toEqual([]);
    const stored = await read('provisionings', 'born');
    expect(conditionOf(stored, 'HostsResolved')).toBeUndefined();
    expect(conditionOf(stored, 'Paused')).toMatchObject({ status: 'True', reason: 'Paused' });
    expect((await hostOf(2)).spec.consumerRef).toBeUndefined();

    const resumed = await annotate('provisionings', 'born', null);
    const after = await harness.publish(sourceEvent('update', resumed));
    expect(after.map((d) => d.reply?.type)).toEqual([
      EventTypes.hostsResolved,
      EventTypes.inventoryRendered,
      EventTypes.kudJobLaunched,
    ]);
    expect((await hostOf(2)).spec.consumerRef).toBeDefined();
    expect(await jobs('born')).toHaveLength(1);
  });

  it('deleted while paused: the cleanup waits, finalizer and KUD Job kept, and its timeout counts from the resume', async () => {
    // 'mid' has its KUD Job from the first test.
    expect(await jobs('mid')).toHaveLength(1);
    await annotate('provisionings', 'mid', '');
    await custom().deleteNamespacedCustomObject({
      ...bpaGroup,
      plural: 'provisionings',
      namespace: ns(),
      name: 'mid',
    });
    const deleting = await read('provisionings', 'mid');
    expect(deleting.metadata.deletionTimestamp).toBeDefined();
    await harness.publish(sourceEvent('update', deleting));
    // Longer than the cleanup's timeout: paused, nothing acts, so nothing gives up either.
    await new Promise((resolve) => setTimeout(resolve, (cleanupTimeoutSeconds + 1) * 1000));
    expect(await ping('kud-job-launch', 'mid')).toEqual([]);
    const kept = await read('provisionings', 'mid');
    expect(kept.metadata.finalizers).toContain('bpa.akraino.org/cleanup');
    expect(conditionOf(kept, 'Paused')).toMatchObject({ status: 'True' });
    expect(conditionOf(kept, 'Ready')?.reason).not.toBe('Deleting');
    expect(await jobs('mid')).toHaveLength(1);
    expect(await cleanupJobs('mid')).toEqual([]);

    // Resumed: the sweep starts the cleanup (a cleanup Job), it does not give up at once.
    const resumed = await annotate('provisionings', 'mid', null);
    expect((await harness.publish(sourceEvent('update', resumed))).map((d) => d.reply)).toEqual([undefined]);
    await ping('kud-job-launch', 'mid');
    const cleaning = await read('provisionings', 'mid');
    expect(conditionOf(cleaning, 'Ready')).toMatchObject({ status: 'Unknown', reason: 'Deleting' });
    expect(await cleanupJobs('mid')).toHaveLength(1);
    expect(await eventCount('mid', 'CleanupTimedOut')).toBe(0);
  }, 60_000);
});

describe('a paused Software', () => {
  let lab: SshHosts;
  let harness: ChainHarness;
  const installJobs = async () =>
    (await batch().listNamespacedJob({ namespace: ns() })).items.filter((job) =>
      job.metadata?.name?.startsWith('tools-install-'),
    );

  beforeAll(async () => {
    lab = await startSshHosts({ count: 1, firstAddress: 150 });
    await core().createNamespacedSecret({
      namespace: ns(),
      body: {
        metadata: { name: 'sw-key' },
        data: { id_rsa: Buffer.from(lab.privateKey).toString('base64') },
      },
    });
    await createReadyProvisioning(cluster.kubeConfig, ns(), 'sw');
    await core().createNamespacedConfigMap({
      namespace: ns(),
      body: {
        metadata: { name: 'sw-configmap', labels: { cluster: 'sw' } },
        data: { MASTER_s1: lab.hosts[0]?.ip ?? '' },
      },
    });
    harness = new ChainHarness(
      cluster.kubeConfig,
      {
        SSH_USER: lab.username,
        SSH_PORT: String(lab.port),
        SSH_KEY_SECRET: 'sw-key',
        SWEEP_NAMESPACES: ns(),
        INSTALL_JOB_IMAGE: 'registry.example/bpa/software-install:test',
      },
      { followInstallJobs: false },
    );
    await harness.start([softwareInstall]);
  }, 120_000);
  afterAll(async () => {
    await harness?.stop();
    await lab?.stopAll();
  });

  it('gets no install Job while paused, from its events, cluster.ready or the sweep; one once resumed', async () => {
    const software = await createSoftware(cluster.kubeConfig, ns(), 'tools', 'sw', {
      masterSoftware: ['htop'],
    });
    await annotate('softwares', 'tools', 'yes');
    expect((await harness.publish(sourceEvent('add', software as never))).map((d) => d.reply)).toEqual([
      undefined,
    ]);
    // cluster.ready names the cluster: every Software of it waiting to be installed is looked at.
    const ready = await read('provisionings', 'sw');
    const clusterReady = chainEvent(
      EventTypes.clusterReady,
      'kud-job-launch',
      provisioningSubject(ns(), 'sw'),
      {
        provisioning: { namespace: ns(), name: 'sw', uid: ready.metadata.uid, generation: 1 },
        cluster: 'sw',
        configMap: 'sw-configmap',
        nodes: [
          {
            label: 's1',
            roles: ['master'],
            mac: 'aa:bb:cc:dd:ee:01',
            ip: lab.hosts[0]?.ip ?? '',
            source: 'host-nics',
          },
        ],
      },
      { cluster: 'sw' },
    );
    expect((await harness.deliver('software-install', clusterReady)).reply).toBeUndefined();
    expect((await harness.deliver('software-install', pingEvent())).status).toBe(204);
    expect(harness.collector.drain()).toEqual([]);
    expect(await installJobs()).toEqual([]);
    let stored = await read('softwares', 'tools');
    expect(conditionOf(stored, 'Installed')).toBeUndefined();
    expect(conditionOf(stored, 'Paused')).toMatchObject({ status: 'True', reason: 'Paused' });
    expect(judgeOne(stored).kstatus.status).toBe('InProgress');
    expect(lab.hosts[0]?.commands()).toEqual([]);

    const resumed = await annotate('softwares', 'tools', null);
    const delivery = (await harness.publish(sourceEvent('update', resumed as never)))[0];
    expect(delivery?.status).toBe(204);
    expect(await installJobs()).toHaveLength(1);
    stored = await read('softwares', 'tools');
    expect(conditionOf(stored, 'Installed')).toMatchObject({ status: 'Unknown', reason: 'Installing' });
    expect(conditionOf(stored, 'Paused')).toMatchObject({ status: 'False', reason: 'Resumed' });
    expect(await eventCount('tools', 'Paused')).toBe(1);
    expect(await eventCount('tools', 'Resumed')).toBe(1);
  }, 120_000);
});

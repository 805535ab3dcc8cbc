/**
 * One owner per cluster name, changes applied, retry, and deletion (contract section 10),
 * through the functions' real HTTP servers and the real API server: two Provisionings racing for
 * one name (in one namespace and in two), the name released on delete, an invalid label fixed
 * with `kubectl label --overwrite`, `bpa.akraino.org/retry`, and the finalizer (a cleanup Job
 * that succeeds, and one that cannot run: a timeout, then the finalizer goes with a Warning).
 *
 * The KUD and cleanup Jobs run on the run's node (the real node: containerd, kubelet) from images
 * and end by the real Job controller: the KUD image's installer (kud-waits, test/fixtures/node/
 * kud-installers) exits with the code the test releases it with, the cleanup Job's `rm` runs in
 * the test shell image, and the cleanup that cannot run has an image the node does not have.
 * Nothing writes a Job's status but the Job controller.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import {
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { createNamespace, deleteNamespace, uniqueNamespaceName } from '../../../local/control-plane/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { testEnv } from '../../support/control-plane-env.js';
import { kudMultiClusterPath } from '../../../shared/core/kud-job.js';
import { isStatus, waitFor } from '../../../local/control-plane/index.js';
import {
  createKudSshKeySecret,
  describeOnNode,
  kudTestImage,
  releaseKudJob,
  waitForJobEnd,
} from '../../support/node.js';
import { ChainHarness, jobUpdateEvent, pingEvent, sourceEvent } from './support/chain-harness.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  createSoftware,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const run = promisify(execFile);
const cluster = useTestCluster();
const mac = (i: number) => `ee:10:00:00:00:${String(i).padStart(2, '0')}`;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describeOnNode('cluster names, changes, retry and deletion', () => {
  let harness: ChainHarness;
  let other = '';
  let functionsNamespace = '';
  const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const batch = () => cluster.kubeConfig.makeApiClient(BatchV1Api);
  const leases = () => cluster.kubeConfig.makeApiClient(CoordinationV1Api);
  const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
  const object = (namespace: string, name: string, clusterName: string, i: number) =>
    provisioningObject({ name, namespace, cluster: clusterName, masters: [{ label: 'm', mac: mac(i) }] });
  const add = async (namespace: string, name: string, clusterName: string, i: number) =>
    createProvisioning(cluster.kubeConfig, object(namespace, name, clusterName, i));
  const jobsOf = async (namespace: string, clusterName: string) =>
    (await batch().listNamespacedJob({ namespace, labelSelector: `cluster=${clusterName}` })).items;
  /** The functions' namespace: the KUD, cleanup and publisher Jobs run there (contract section 12). */
  const fns = () => functionsNamespace;
  const ping = async (target: string) => {
    expect((await harness.deliver(target, pingEvent())).status).toBe(204);
    return harness.collector.drain();
  };
  const kubectl = (...args: string[]) => run('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args]);

  beforeAll(async () => {
    other = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('tenant-b'));
    functionsNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('bpa-functions'));
    for (let i = 1; i <= 12; i++)
      await createBareMetalHost(cluster.kubeConfig, {
        name: `h-${i}`,
        namespace: cluster.namespace,
        bootMac: mac(i),
        nics: [{ name: 'eth0', mac: mac(i), ip: `10.50.0.${i}` }],
      });
    // The operator's key, in the functions' namespace: a tenant's Secrets are never mounted.
    await createKudSshKeySecret(cluster.kubeConfig, functionsNamespace);
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: cluster.namespace,
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: `${cluster.namespace},${other}`,
      FUNCTIONS_NAMESPACE: functionsNamespace,
      KUD_IMAGE: kudTestImage.waits,
      // The cleanup Job's `rm` runs on the node in the test shell.
      CLEANUP_IMAGE: 'bpa.local/test/shell:1',
      CLEANUP_TIMEOUT_SECONDS: '600',
    });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
  });
  afterAll(async () => {
    await harness?.stop();
    for (const namespace of [other, functionsNamespace])
      if (namespace) await deleteNamespace(cluster.kubeConfig, namespace);
  });

  it.each([
    ['in one namespace', () => cluster.namespace, 'race-one'],
    ['in two namespaces', () => other, 'race-two'],
  ])(
    'lets exactly one of two racing Provisionings own a cluster name (%s)',
    async (_how, secondNamespace, name) => {
      const i = name === 'race-one' ? 1 : 2;
      const [a, b] = await Promise.all([
        add(cluster.namespace, `${name}-a`, name, i),
        add(secondNamespace(), `${name}-b`, name, i),
      ]);
      await Promise.all([harness.publish(sourceEvent('add', a)), harness.publish(sourceEvent('add', b))]);
      const states = await Promise.all([
        readProvisioning(cluster.kubeConfig, cluster.namespace, `${name}-a`),
        readProvisioning(cluster.kubeConfig, secondNamespace(), `${name}-b`),
      ]);
      const inUse = states.filter((s) => conditionOf(s, 'Ready')?.reason === 'ClusterNameInUse');
      const owners = states.filter((s) => conditionOf(s, 'HostsResolved')?.status === 'True');
      expect([inUse.length, owners.length]).toEqual([1, 1]);
      const owner = owners[0]!;
      expect(conditionOf(inUse[0]!, 'Ready')?.message).toBe(
        `Cluster ${name} is already provisioned by ${owner.metadata.namespace}/${owner.metadata.name}`,
      );
      // The loser touched nothing: one Job, in the functions' namespace, none in a tenant's.
      expect(
        (await jobsOf(fns(), name)).map((job) => job.metadata?.labels?.['bpa.akraino.org/provisioning-uid']),
      ).toEqual([owner.metadata.uid]);
      expect((await jobsOf(cluster.namespace, name)).length + (await jobsOf(other, name)).length).toBe(0);
      expect(
        (await leases().readNamespacedLease({ name: `cluster-${name}`, namespace: functionsNamespace })).spec
          ?.holderIdentity,
      ).toBe(`${owner.metadata.namespace}/${owner.metadata.name}`);
    },
  );

  it('frees the name when the owner is deleted (cleanup Job, finalizer), and the waiting one proceeds', async () => {
    const owner = await add(cluster.namespace, 'owner', 'shared', 3);
    await harness.publish(sourceEvent('add', owner));
    const waiting = await add(other, 'waiting', 'shared', 3);
    await harness.publish(sourceEvent('add', waiting));
    expect(conditionOf(await readProvisioning(cluster.kubeConfig, other, 'waiting'), 'Ready')?.reason).toBe(
      'ClusterNameInUse',
    );
    expect((await readProvisioning(cluster.kubeConfig, cluster.namespace, 'owner')).metadata).toMatchObject({
      finalizers: ['bpa.akraino.org/cleanup'],
    });

    await custom().deleteNamespacedCustomObject({
      ...bpaGroup,
      plural: 'provisionings',
      namespace: cluster.namespace,
      name: 'owner',
    });
    const kudPods = await core().listNamespacedPod({
      namespace: fns(),
      labelSelector: 'job-name=kud-shared',
    });
    await ping('kud-job-launch'); // deletes the KUD Job, creates the cleanup Job
    const cleanup = await batch().readNamespacedJob({
      name: 'kud-shared-cleanup',
      namespace: fns(),
    });
    expect(cleanup.spec?.template.spec?.hostNetwork).toBe(true);
    // Pinned to the node the KUD pod ran on (read from the Job's own pod).
    expect(cleanup.spec?.template.spec?.nodeName).toBe(kudPods.items[0]?.spec?.nodeName);
    expect(cleanup.spec?.template.spec?.nodeName).toEqual(expect.any(String));
    expect(cleanup.spec?.template.spec?.containers[0]?.args).toEqual([
      'rm -rf -- /opt/kud/multi-cluster/shared',
    ]);
    expect(
      conditionOf(await readProvisioning(cluster.kubeConfig, cluster.namespace, 'owner'), 'Ready')?.reason,
    ).toBe('Deleting');
    expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-shared-cleanup')).ended).toMatchObject({
      type: 'Complete',
    });
    await ping('kud-job-launch'); // releases the name, removes the finalizer: the Provisioning goes
    await expect(readProvisioning(cluster.kubeConfig, cluster.namespace, 'owner')).rejects.toMatchObject({
      code: 404,
    });
    // Across the two namespaces: nothing of it is left in the functions' namespace either.
    const left = (await batch().listNamespacedJob({ namespace: fns(), labelSelector: 'cluster=shared' }))
      .items;
    expect(left.filter((job) => !job.metadata?.deletionTimestamp)).toEqual([]);
    await expect(
      core().readNamespacedConfigMap({ name: 'shared-inventory', namespace: fns() }),
    ).rejects.toMatchObject({ code: 404 });

    const sent = await ping('host-lookup'); // the sweep retries ClusterNameInUse
    expect(sent.map((e) => e.type)).toContain(EventTypes.hostsResolved);
    expect(
      conditionOf(await readProvisioning(cluster.kubeConfig, other, 'waiting'), 'HostsResolved')?.status,
    ).toBe('True');
  }, 240_000);

  it('releases the old name of a renamed cluster only after its objects are gone; the waiting one then proceeds', async () => {
    const ns = cluster.namespace;
    const lease = (name: string) =>
      leases()
        .readNamespacedLease({ name: `cluster-${name}`, namespace: functionsNamespace })
        .catch(() => undefined);
    const configMap = (name: string) =>
      core()
        .readNamespacedConfigMap({ name, namespace: ns })
        .catch(() => undefined);
    const renamer = await add(ns, 'renamer', 'old-name', 7);
    await harness.publish(sourceEvent('add', renamer));
    await releaseKudJob(fns(), 'old-name', 0);
    expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-old-name')).ended.type).toBe('Complete');
    const ready = await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-old-name'));
    expect(ready.map((d) => d.reply?.type)).toContain(EventTypes.clusterReady);
    expect(await configMap('old-name-configmap')).toBeDefined();
    expect(await configMap('old-name-inventory')).toBeDefined();
    // What KUD leaves on the node for the cluster (its directory): the cleanup Job removes it.
    const nodeDir = join(process.env[testEnv.nodeHostPaths] ?? '', kudMultiClusterPath, 'old-name');
    await mkdir(nodeDir, { recursive: true });
    await writeFile(join(nodeDir, 'marker'), 'KUD was here\n');
    // A host of its own: renamer keeps its host under the new name (one owner per host).
    const rival = await add(other, 'rival', 'old-name', 8);
    await harness.publish(sourceEvent('add', rival));
    expect(conditionOf(await readProvisioning(cluster.kubeConfig, other, 'rival'), 'Ready')?.reason).toBe(
      'ClusterNameInUse',
    );

    await kubectl(
      'label',
      '--overwrite',
      '-n',
      ns,
      'provisioning.bpa.akraino.org/renamer',
      'cluster=new-name',
    );
    const relabelled = await readProvisioning(cluster.kubeConfig, ns, 'renamer');
    expect((await harness.publish(sourceEvent('update', relabelled))).map((d) => d.reply?.type)).toEqual([
      EventTypes.hostsResolved,
      EventTypes.inventoryRendered,
      EventTypes.kudJobLaunched,
    ]);
    const renamed = await readProvisioning(cluster.kubeConfig, ns, 'renamer');
    expect((renamed.status as Record<string, unknown>).releasingClusters).toEqual([
      { cluster: 'old-name', since: expect.any(String), launched: true },
    ]);
    expect((await lease('new-name'))?.spec?.holderIdentity).toBe(`${ns}/renamer`);
    // The old name stays claimed while its objects exist: the rival still waits.
    expect((await lease('old-name'))?.spec?.holderIdentity).toBe(`${ns}/renamer`);
    await ping('host-lookup');
    expect(conditionOf(await readProvisioning(cluster.kubeConfig, other, 'rival'), 'Ready')?.reason).toBe(
      'ClusterNameInUse',
    );

    // Sweeps: the old ConfigMaps go, then the cleanup Job runs on the KUD pod's node; then the
    // old name's objects in the functions' namespace go too.
    const oldPods = await core().listNamespacedPod({
      namespace: fns(),
      labelSelector: 'job-name=kud-old-name',
    });
    await ping('kud-job-launch');
    expect(await configMap('old-name-configmap')).toBeUndefined();
    expect(await configMap('old-name-inventory')).toBeUndefined();
    expect(await lease('old-name')).toBeDefined();
    const cleanup = await waitFor(
      async () => {
        await ping('kud-job-launch');
        return batch()
          .readNamespacedJob({ name: 'kud-old-name-cleanup', namespace: fns() })
          .catch(() => undefined);
      },
      { what: 'the cleanup Job of the old name', timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(cleanup.spec?.template.spec?.containers[0]?.args).toEqual([
      'rm -rf -- /opt/kud/multi-cluster/old-name',
    ]);
    expect(cleanup.spec?.template.spec?.nodeName).toBe(oldPods.items[0]?.spec?.nodeName);
    expect(await lease('old-name')).toBeDefined();
    expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-old-name-cleanup')).ended.type).toBe(
      'Complete',
    );
    await ping('kud-job-launch');
    expect(await lease('old-name')).toBeUndefined();
    for (const name of ['kud-old-name', 'kud-old-name-cleanup'])
      expect(
        await batch()
          .readNamespacedJob({ name, namespace: fns() })
          .then((job) => (job.metadata?.deletionTimestamp ? undefined : job))
          .catch(() => undefined),
      ).toBeUndefined();
    await expect(
      core().readNamespacedConfigMap({ name: 'old-name-inventory', namespace: fns() }),
    ).rejects.toMatchObject({ code: 404 });
    expect(
      ((await readProvisioning(cluster.kubeConfig, ns, 'renamer')).status as Record<string, unknown>)
        .releasingClusters,
    ).toBeUndefined();
    expect(existsSync(nodeDir)).toBe(false);
    // The new name is untouched by the release.
    expect((await lease('new-name'))?.spec?.holderIdentity).toBe(`${ns}/renamer`);
    expect(
      (await batch().readNamespacedJob({ name: 'kud-new-name', namespace: fns() })).metadata?.uid,
    ).toBeDefined();

    const sent = await ping('host-lookup'); // the sweep retries ClusterNameInUse
    expect(sent.map((e) => e.type)).toContain(EventTypes.hostsResolved);
    expect(
      conditionOf(await readProvisioning(cluster.kubeConfig, other, 'rival'), 'HostsResolved')?.status,
    ).toBe('True');
    expect((await lease('old-name'))?.spec?.holderIdentity).toBe(`${other}/rival`);
  }, 240_000);

  it('removes the finalizer with a Warning Event when the cleanup cannot run in time', async () => {
    const quick = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: cluster.namespace,
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: cluster.namespace,
      FUNCTIONS_NAMESPACE: functionsNamespace,
      KUD_IMAGE: kudTestImage.waits,
      // An image the node does not have: the cleanup Job's pod waits (ErrImageNeverPull).
      CLEANUP_IMAGE: 'bpa.local/test/not-on-this-node:1',
      CLEANUP_TIMEOUT_SECONDS: '1',
    });
    await quick.start([hostLookup, inventoryRender, kudJobLaunch]);
    try {
      const created = await add(cluster.namespace, 'stuck', 'stuck', 4);
      await quick.publish(sourceEvent('add', created));
      await custom().deleteNamespacedCustomObject({
        ...bpaGroup,
        plural: 'provisionings',
        namespace: cluster.namespace,
        name: 'stuck',
      });
      await quick.deliver('kud-job-launch', pingEvent()); // cleanup Job created; it cannot run
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await quick.deliver('kud-job-launch', pingEvent());
      await expect(readProvisioning(cluster.kubeConfig, cluster.namespace, 'stuck')).rejects.toMatchObject({
        code: 404,
      });
      const events = await core().listNamespacedEvent({ namespace: cluster.namespace });
      const warning = events.items.find(
        (e) => e.involvedObject.name === 'stuck' && e.reason === 'CleanupTimedOut',
      );
      expect(warning).toMatchObject({ type: 'Warning' });
      expect(warning?.message).toContain('/opt/kud/multi-cluster/stuck may be left on the node');
    } finally {
      await quick.stop();
    }
  });

  it('proceeds when an invalid cluster label is fixed with kubectl label --overwrite', async () => {
    const created = await add(cluster.namespace, 'relabel', 'Not_A_Label', 5);
    await harness.publish(sourceEvent('add', created));
    expect(
      conditionOf(await readProvisioning(cluster.kubeConfig, cluster.namespace, 'relabel'), 'Ready')?.reason,
    ).toBe('InvalidProvisioning');
    await kubectl(
      'label',
      '--overwrite',
      '-n',
      cluster.namespace,
      'provisioning.bpa.akraino.org/relabel',
      'cluster=relabel',
    );
    const live = await readProvisioning(cluster.kubeConfig, cluster.namespace, 'relabel');
    expect(live.metadata.generation).toBe(1); // labels do not bump the generation
    const deliveries = await harness.publish(sourceEvent('update', live));
    expect(deliveries.map((d) => d.reply?.type)).toEqual([
      EventTypes.hostsResolved,
      EventTypes.inventoryRendered,
      EventTypes.kudJobLaunched,
    ]);
    expect(await jobsOf(fns(), 'relabel')).toHaveLength(1);
  });

  it('re-runs a failed Provisioning for its generation on a new bpa.akraino.org/retry value (a new Job)', async () => {
    const created = await add(cluster.namespace, 'retry', 'retry', 6);
    await harness.publish(sourceEvent('add', created));
    const first = await batch().readNamespacedJob({ name: 'kud-retry', namespace: fns() });
    await releaseKudJob(fns(), 'retry', 1);
    expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-retry')).ended).toMatchObject({
      type: 'Failed',
      reason: 'BackoffLimitExceeded',
    });
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-retry'));
    expect(
      conditionOf(await readProvisioning(cluster.kubeConfig, cluster.namespace, 'retry'), 'Ready')?.reason,
    ).toBe('JobFailed');

    const annotated = (await custom().patchNamespacedCustomObject(
      {
        ...bpaGroup,
        plural: 'provisionings',
        namespace: cluster.namespace,
        name: 'retry',
        body: { metadata: { annotations: { 'bpa.akraino.org/retry': '1' } } },
      },
      mergePatch,
    )) as Awaited<ReturnType<typeof readProvisioning>>;
    const deliveries = await harness.publish(sourceEvent('update', annotated));
    expect(deliveries.map((d) => d.reply?.type)).toEqual([
      EventTypes.hostsResolved,
      EventTypes.inventoryRendered,
      EventTypes.kudJobLaunched,
    ]);
    const second = await batch().readNamespacedJob({ name: 'kud-retry', namespace: fns() });
    expect(second.metadata?.uid).not.toBe(first.metadata?.uid);
    expect(second.metadata?.annotations?.['bpa.akraino.org/retry-of']).toBe('1');
    // The same value again is not a new request.
    const again = await harness.publish(
      sourceEvent('update', await readProvisioning(cluster.kubeConfig, cluster.namespace, 'retry')),
    );
    expect(again.map((d) => d.status)).toEqual([204]);
  }, 240_000);
  it('lets a tenant namespace deleted while the functions run go within the cleanup timeout (KUD Job ran, a Software in it)', async () => {
    // Contract section 13: the namespace controller deletes the Provisioning, whose finalizer holds
    // the namespace until kud-job-launch's sweep has run the cleanup Job (in the functions'
    // namespace, which is not the one terminating) and removed it; the Software and the
    // ConfigMap KUD's success wrote there go with the namespace.
    const cleanupTimeoutSeconds = 180;
    const doomed = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('doomed'));
    const sweeping = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: cluster.namespace,
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: doomed,
      FUNCTIONS_NAMESPACE: functionsNamespace,
      KUD_IMAGE: kudTestImage.waits,
      CLEANUP_IMAGE: 'bpa.local/test/shell:1',
      CLEANUP_TIMEOUT_SECONDS: String(cleanupTimeoutSeconds),
    });
    await sweeping.start([hostLookup, inventoryRender, kudJobLaunch]);
    try {
      const created = await add(doomed, 'doomed', 'doomed', 11);
      await sweeping.publish(sourceEvent('add', created));
      await releaseKudJob(fns(), 'doomed', 0);
      expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-doomed')).ended.type).toBe('Complete');
      const ready = await sweeping.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-doomed'));
      expect(ready.map((d) => d.reply?.type)).toContain(EventTypes.clusterReady);
      expect(
        (await core().readNamespacedConfigMap({ name: 'doomed-configmap', namespace: doomed })).metadata
          ?.name,
      ).toBe('doomed-configmap');
      await createSoftware(cluster.kubeConfig, doomed, 'tools', 'doomed', { masterSoftware: ['htop'] });
      const nodeDir = join(process.env[testEnv.nodeHostPaths] ?? '', kudMultiClusterPath, 'doomed');
      await mkdir(nodeDir, { recursive: true });
      await writeFile(join(nodeDir, 'marker'), 'KUD was here\n');

      await core().deleteNamespace({ name: doomed });
      // The PingSource's part: the sweeps, again and again, until the namespace is gone, no longer
      // than the cleanup timeout (past it the finalizer would go without the cleanup). Every
      // sweep succeeds meanwhile: a step that would create something in the terminating
      // namespace (the kubeconfig Secret, an Event) is not a failure to retry.
      const answers = new Set<string>();
      await waitFor(
        async () => {
          const gone = await core()
            .readNamespace({ name: doomed })
            .then(() => false)
            .catch((error: unknown) => (isStatus(error, 404) ? true : Promise.reject(error)));
          if (gone) return true;
          for (const target of ['host-lookup', 'kud-job-launch'])
            answers.add(`${target} ${(await sweeping.deliver(target, pingEvent())).status}`);
          return undefined;
        },
        { what: `namespace ${doomed} to be gone`, timeoutMs: cleanupTimeoutSeconds * 1000, intervalMs: 500 },
      );
      expect([...answers].sort()).toEqual(['host-lookup 204', 'kud-job-launch 204']);
      // The cleanup ran (not the timeout's way out): the directory is gone from the node, and
      // nothing of the Provisioning is left in the functions' namespace; its name is free.
      expect(existsSync(nodeDir)).toBe(false);
      const left = (await batch().listNamespacedJob({ namespace: fns(), labelSelector: 'cluster=doomed' }))
        .items;
      expect(left.filter((job) => !job.metadata?.deletionTimestamp)).toEqual([]);
      await expect(
        leases().readNamespacedLease({ name: 'cluster-doomed', namespace: functionsNamespace }),
      ).rejects.toMatchObject({ code: 404 });
    } finally {
      await sweeping.stop();
      await deleteNamespace(cluster.kubeConfig, doomed);
    }
  }, 420_000);
});

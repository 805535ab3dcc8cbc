/**
 * Hostile tenants against the Provisioning chain's Jobs (contract section 12, issue 23 items 1
 * and 3): each attack acts as a tenant (test/resilience/support/tenant.ts: a ServiceAccount
 * holding only its namespace's rights) and must gain nothing outside that namespace:
 * - it edits its `<cluster>-inventory` (ansible_connection=local) between the render and the
 *   launch, and again before a retry: what the privileged KUD pod copies on the node is unchanged;
 * - it pre-creates a look-alike `<cluster>-inventory` / `<cluster>-configmap` with forged labels
 *   and a forged controller owner reference: ObjectConflict, left untouched;
 * - it recreates a finished `kud-<cluster>` Job with the same labels and launch hash in its own
 *   namespace: the chain never reads it (the cluster is not taken for installed);
 * - it runs a pod labelled `job-name=kud-<cluster>` on another node: the publisher and the
 *   cleanup still go to the node the KUD pod ran on, and their pods' logs are not the tenant's.
 *
 * Real API server, Kubernetes' own Job controller, the run's node (the real node: containerd,
 * kubelet) running the KUD test image kud-waits (test/fixtures/node, an OCI image),
 * the functions in-process (ChainHarness). Each attack is tallied as `Attacks`.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { EventTypes } from '../../shared/events/types.js';
import { kudMultiClusterPath } from '../../shared/core/kud-job.js';
import { definition as hostLookup } from '../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../functions/kud-job-launch/index.js';
import {
  createNamespace,
  deleteNamespace,
  uniqueNamespaceName,
  waitFor,
} from '../../local/control-plane/index.js';
import { useTestCluster } from '../support/cluster.js';
import { pastOwnershipGrace } from '../support/ownership.js';
import { testEnv } from '../support/control-plane-env.js';
import {
  createKudSshKeySecret,
  describeOnNode,
  kudTestImage,
  releaseKudJob,
  waitForJobEnd,
} from '../support/node.js';
import {
  ChainHarness,
  jobUpdateEvent,
  pingEvent,
  sourceEvent,
} from '../integration/functions/support/chain-harness.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  provisioningObject,
  readProvisioning,
} from '../integration/functions/support/fixtures.js';
import { createTenant, type Tenant } from './support/tenant.js';
import { FaultTally } from './report/tally.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);
const mac = (i: number) => `de:00:00:00:00:${String(i).padStart(2, '0')}`;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const evil = '[all:vars]\nansible_connection=local\n';

describeOnNode('hostile tenants against the KUD Jobs', () => {
  let harness: ChainHarness;
  let tenant: Tenant;
  let functionsNamespace = '';
  const ns = () => cluster.namespace;
  const fns = () => functionsNamespace;
  const admin = {
    core: () => cluster.kubeConfig.makeApiClient(CoreV1Api),
    batch: () => cluster.kubeConfig.makeApiClient(BatchV1Api),
  };
  const as = {
    core: () => tenant.kubeConfig.makeApiClient(CoreV1Api),
    batch: () => tenant.kubeConfig.makeApiClient(BatchV1Api),
    custom: () => tenant.kubeConfig.makeApiClient(CustomObjectsApi),
  };
  const status = (name: string) => readProvisioning(cluster.kubeConfig, ns(), name);
  type Created = Awaited<ReturnType<typeof status>>;
  /** The tenant creates its Provisioning (as it may). */
  const create = async (name: string, i: number): Promise<Created> => {
    const body = provisioningObject({
      name,
      namespace: ns(),
      cluster: name,
      masters: [{ label: 'm', mac: mac(i) }],
    });
    return (await as.custom().createNamespacedCustomObject({
      ...bpaGroup,
      plural: 'provisionings',
      namespace: ns(),
      body,
    })) as Created;
  };
  /** What the KUD container copied onto the node (the Job's script: cp <mounted> <cluster dir>). */
  const onNode = (name: string) =>
    readFile(
      join(process.env[testEnv.nodeHostPaths] ?? '', kudMultiClusterPath, name, 'hosts.ini'),
      'utf8',
    ).catch(() => undefined);
  /** The tenant rewrites its copy of the inventory (it may update ConfigMaps in its namespace). */
  const tamper = async (name: string) => {
    const stored = await as.core().readNamespacedConfigMap({ name: `${name}-inventory`, namespace: ns() });
    await as.core().replaceNamespacedConfigMap({
      name: `${name}-inventory`,
      namespace: ns(),
      body: { ...stored, data: { 'hosts.ini': `${stored.data?.['hosts.ini'] ?? ''}${evil}` } },
    });
  };
  /** The hosts.ini the privileged pod copied, once its pod has run the copy. */
  const copiedByPod = (name: string) =>
    waitFor(async () => onNode(name), {
      what: `the KUD pod of ${name} copying its inventory on the node`,
      timeoutMs: 60_000,
      intervalMs: 250,
    });

  beforeAll(async () => {
    functionsNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('bpa-functions'));
    tenant = await createTenant(cluster.kubeConfig, ns());
    for (let i = 1; i <= 4; i++)
      await createBareMetalHost(cluster.kubeConfig, {
        name: `hostile-${i}`,
        namespace: ns(),
        bootMac: mac(i),
        nics: [{ name: 'eth0', mac: mac(i), ip: `10.41.0.${i}` }],
      });
    await createKudSshKeySecret(cluster.kubeConfig, functionsNamespace);
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: ns(),
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: ns(),
      FUNCTIONS_NAMESPACE: functionsNamespace,
      KUD_IMAGE: kudTestImage.waits,
    });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
  });
  afterAll(async () => {
    await harness?.stop();
    if (functionsNamespace) await deleteNamespace(cluster.kubeConfig, functionsNamespace);
  });

  it('a tenant that edits its <cluster>-inventory before the launch and before a retry runs nothing on the node', async () => {
    const created = await create('tamper', 1);
    // The chain step by step, so that the tenant edits between the render and the launch.
    const resolved = await harness.deliver('host-lookup', sourceEvent('add', created));
    const rendered = await harness.deliver('inventory-render', resolved.reply!);
    expect(rendered.reply?.type).toBe(EventTypes.inventoryRendered);
    const clean = (await as.core().readNamespacedConfigMap({ name: 'tamper-inventory', namespace: ns() }))
      .data?.['hosts.ini'];
    await tamper('tamper');
    expect((await harness.deliver('kud-job-launch', rendered.reply!)).reply?.type).toBe(
      EventTypes.kudJobLaunched,
    );
    const first = await copiedByPod('tamper');
    const launchGained = first !== clean || first.includes('ansible_connection');
    tally.record('Attacks', !launchGained);
    expect(first).toBe(clean);

    // The Job fails; the tenant edits again, then asks for a retry (as it may).
    await releaseKudJob(fns(), 'tamper', 1);
    await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-tamper');
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-tamper'));
    expect(conditionOf(await status('tamper'), 'Ready')).toMatchObject({ reason: 'JobFailed' });
    await tamper('tamper');
    const annotated = (await as.custom().patchNamespacedCustomObject(
      {
        ...bpaGroup,
        plural: 'provisionings',
        namespace: ns(),
        name: 'tamper',
        body: { metadata: { annotations: { 'bpa.akraino.org/retry': 'again' } } },
      },
      mergePatch,
    )) as Created;
    await rm(join(process.env[testEnv.nodeHostPaths] ?? '', kudMultiClusterPath, 'tamper', 'hosts.ini'), {
      force: true,
    });
    // Step by step again: the tenant edits after the new render, right before the new launch.
    const again = await harness.deliver('host-lookup', sourceEvent('update', annotated));
    const reRendered = await harness.deliver('inventory-render', again.reply!);
    expect(reRendered.reply?.type).toBe(EventTypes.inventoryRendered);
    await tamper('tamper');
    expect((await harness.deliver('kud-job-launch', reRendered.reply!)).reply?.type).toBe(
      EventTypes.kudJobLaunched,
    );
    const retried = await copiedByPod('tamper');
    const retryGained = retried !== clean || retried.includes('ansible_connection');
    tally.record('Attacks', !retryGained);
    expect(retried).toBe(clean);
    const mounted = await admin
      .core()
      .readNamespacedConfigMap({ name: 'tamper-inventory', namespace: fns() });
    expect(mounted.data?.['hosts.ini']).toBe(clean);
  }, 180_000);

  it.each([
    ['inventory', 'forged-inv', 2, 'forged-inv-inventory'],
    ['configmap', 'forged-ip', 3, 'forged-ip-configmap'],
  ] as const)(
    'a look-alike <cluster>-%s with forged labels and owner reference is ObjectConflict, untouched',
    async (_what, name, i, configMapName) => {
      const created = await create(name, i);
      const forged: V1ConfigMap = {
        metadata: {
          name: configMapName,
          namespace: ns(),
          labels: { cluster: name, 'app.kubernetes.io/managed-by': 'bpa-functions' },
          ownerReferences: [
            {
              apiVersion: 'bpa.akraino.org/v1alpha1',
              kind: 'Provisioning',
              name,
              uid: created.metadata.uid ?? '',
              controller: true,
            },
          ],
        },
        data: { 'hosts.ini': evil, MASTER_m: '192.0.2.66' },
      };
      const planted = await as.core().createNamespacedConfigMap({ namespace: ns(), body: forged });
      // Older than the ownership grace (a fresh one may be a concurrent delivery's, not yet
      // recorded: the step waits, writing nothing), so the steps judge it a look-alike at once.
      await pastOwnershipGrace(planted.metadata);
      await harness.publish(sourceEvent('add', created));
      if (name === 'forged-ip') {
        await releaseKudJob(fns(), name, 0);
        await waitForJobEnd(cluster.kubeConfig, fns(), `kud-${name}`);
        await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), `kud-${name}`));
      }
      const after = await admin.core().readNamespacedConfigMap({ name: configMapName, namespace: ns() });
      const ready = conditionOf(await status(name), 'Ready');
      const gained =
        after.metadata?.resourceVersion !== planted.metadata?.resourceVersion ||
        ready?.reason !== 'ObjectConflict';
      tally.record('Attacks', !gained);
      expect(ready).toMatchObject({
        status: 'False',
        reason: 'ObjectConflict',
        message: expect.stringContaining(`ConfigMap ${ns()}/${configMapName} already exists`),
      });
      expect(after.metadata?.resourceVersion).toBe(planted.metadata?.resourceVersion);
      expect(after.data).toEqual(forged.data);
    },
    180_000,
  );

  it('a tenant that recreates a finished kud-<cluster> Job with the same labels and launch hash gains nothing', async () => {
    const created = await create('fake-done', 4);
    await harness.publish(sourceEvent('add', created));
    const launched = conditionOf(await status('fake-done'), 'JobLaunched');
    const hash = /launch hash ([0-9a-f]{64})/.exec(launched?.message ?? '')?.[1] ?? '';
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    // In its own namespace, everything it can see copied onto a Job that just exits 0.
    await as
      .batch()
      .deleteNamespacedJob({
        name: 'kud-fake-done',
        namespace: ns(),
        body: { propagationPolicy: 'Background' },
      })
      .catch(() => undefined);
    await as.batch().createNamespacedJob({
      namespace: ns(),
      body: {
        metadata: {
          name: 'kud-fake-done',
          labels: {
            cluster: 'fake-done',
            'app.kubernetes.io/managed-by': 'bpa-functions',
            'bpa.akraino.org/provisioning-uid': created.metadata.uid ?? '',
          },
          annotations: {
            'bpa.akraino.org/launch-hash': hash,
            'bpa.akraino.org/provisioning-generation': '1',
            'bpa.akraino.org/provisioning-namespace': ns(),
            'bpa.akraino.org/provisioning-name': 'fake-done',
          },
          ownerReferences: [
            {
              apiVersion: 'bpa.akraino.org/v1alpha1',
              kind: 'Provisioning',
              name: 'fake-done',
              uid: created.metadata.uid ?? '',
              controller: true,
            },
          ],
        },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: 'Never',
              containers: [{ name: 'kud', image: 'bpa.local/test/shell:1', args: ['-c', 'true'] }],
            },
          },
        },
      },
    });
    await waitForJobEnd(cluster.kubeConfig, ns(), 'kud-fake-done');
    // Its update reaches the functions (the source watches every namespace), and the sweep runs.
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, ns(), 'kud-fake-done'));
    await harness.deliver('kud-job-launch', pingEvent());
    const live = await status('fake-done');
    const gained =
      conditionOf(live, 'KudInstalled')?.status === 'True' || conditionOf(live, 'Ready')?.status === 'True';
    tally.record('Attacks', !gained);
    expect(conditionOf(live, 'KudInstalled')).toBeUndefined();
    expect(conditionOf(live, 'Ready')).toMatchObject({ status: 'Unknown' });
    expect(
      harness.replies(EventTypes.clusterReady).filter((e) => (e.subject ?? '').endsWith('/fake-done')),
    ).toEqual([]);
    // The real Job still runs where the tenant cannot write.
    expect(
      (await admin.batch().readNamespacedJob({ name: 'kud-fake-done', namespace: fns() })).status?.active,
    ).toBe(1);
  }, 180_000);

  it('a tenant pod labelled job-name=kud-<cluster> pulls neither the publisher nor the cleanup to its node', async () => {
    const created = (await status('fake-done')) ?? (await create('fake-done', 4));
    const kudPods = await admin
      .core()
      .listNamespacedPod({ namespace: fns(), labelSelector: 'job-name=kud-fake-done' });
    const kudNode = kudPods.items[0]?.spec?.nodeName;
    expect(kudNode).toEqual(expect.any(String));
    // Newer than the KUD pod, with the KUD Job's labels, bound to a node of the tenant's choosing.
    for (const namespace of [ns()])
      await as.core().createNamespacedPod({
        namespace,
        body: {
          metadata: {
            name: 'decoy',
            labels: {
              'job-name': 'kud-fake-done',
              'batch.kubernetes.io/job-name': 'kud-fake-done',
              cluster: 'fake-done',
            },
          },
          spec: {
            nodeName: 'tenant-node',
            restartPolicy: 'Never',
            containers: [{ name: 'x', image: 'bpa.local/test/shell:1', args: ['-c', 'sleep 1'] }],
          },
        },
      });
    // The real KUD Job ends; the chain goes on to the publisher.
    await releaseKudJob(fns(), 'fake-done', 0);
    await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-fake-done');
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-fake-done'));
    await harness.deliver('kud-job-launch', pingEvent());
    const publisher = await admin
      .batch()
      .readNamespacedJob({ name: 'kud-fake-done-kubeconfig', namespace: fns() })
      .catch(() => admin.batch().readNamespacedJob({ name: 'kud-fake-done-kubeconfig', namespace: ns() }));
    const publisherGained = publisher.spec?.template.spec?.nodeName !== kudNode;
    tally.record('Attacks', !publisherGained);
    expect(publisher.metadata?.namespace).toBe(fns());
    expect(publisher.spec?.template.spec?.nodeName).toBe(kudNode);
    expect(publisher.spec?.template.spec?.automountServiceAccountToken).toBe(false);
    // The publisher's output (its pod's log) is not the tenant's to read.
    const readsLog = await as
      .core()
      .listNamespacedPod({ namespace: fns() })
      .then(
        () => true,
        () => false,
      );
    expect(readsLog).toBe(false);

    // Deleted: the cleanup goes to the KUD pod's node too.
    await as.custom().deleteNamespacedCustomObject({
      ...bpaGroup,
      plural: 'provisionings',
      namespace: ns(),
      name: created.metadata.name,
    });
    await harness.deliver('kud-job-launch', pingEvent());
    const cleanup = await admin
      .batch()
      .readNamespacedJob({ name: 'kud-fake-done-cleanup', namespace: fns() });
    const cleanupGained = cleanup.spec?.template.spec?.nodeName !== kudNode;
    tally.record('Attacks', !cleanupGained);
    expect(cleanup.spec?.template.spec?.nodeName).toBe(kudNode);
  }, 180_000);
});

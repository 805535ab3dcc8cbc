/**
 * The chain for a Virtlet VM cluster (IPs from running VM pods) and a masters-only cluster,
 * and a KUD Job that fails: each through the functions' real HTTP servers and the API server.
 * The KUD Jobs run on the run's node and end by the real Job controller: their image's installer
 * (kud-waits, test/fixtures/node/kud-installers) exits with the code the test releases it with.
 *
 * IMITATION: the Virtlet VM pods are written by the test, status included (no Virtlet here); they
 * name a scheduler that does not exist, so no scheduler or node ever touches them
 * (test/support/vm-namespace.ts).
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { useTestCluster } from '../../support/cluster.js';
import {
  createKudSshKeySecret,
  describeOnNode,
  jobPodLog,
  kudTestImage,
  releaseKudJob,
  waitForJobEnd,
} from '../../support/node.js';
import { createVirtletScenarioPods } from '../../support/vm-namespace.js';
import { ChainHarness, jobUpdateEvent, sourceEvent } from './support/chain-harness.js';
import {
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster();
const golden = (name: string) => readFile(new URL(`../../golden/functions/${name}`, import.meta.url), 'utf8');

describeOnNode('chain variants', () => {
  let harness: ChainHarness;

  beforeAll(async () => {
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: cluster.namespace,
      VM_NAMESPACES: cluster.namespace,
      IP_SOURCES: 'nics',
      KUD_IMAGE: kudTestImage.waits,
    });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
    // The KUD Jobs run in the functions' namespace and mount the operator's key there (section 12).
    await createKudSshKeySecret(cluster.kubeConfig, harness.functionsNamespace);
  });
  afterAll(() => harness?.stop());

  it('builds a Virtlet VM cluster from its running VM pods', async () => {
    const namespace = cluster.namespace;
    await createVirtletScenarioPods(cluster.kubeConfig, namespace);
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'vms',
        namespace,
        cluster: 'vm-cluster',
        clusterType: 'virtlet-vm',
        masters: [{ label: 'vm-master', mac: 'de:ad:00:00:00:01' }],
        workers: [{ label: 'vm-worker', mac: 'de:ad:00:00:00:02' }],
      }),
    );
    const deliveries = await harness.publish(sourceEvent('add', created));
    expect(deliveries.map((d) => d.reply?.type)).toEqual([
      EventTypes.hostsResolved,
      EventTypes.inventoryRendered,
      EventTypes.kudJobLaunched,
    ]);
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const inventory = await core.readNamespacedConfigMap({ name: 'vm-cluster-inventory', namespace });
    expect(inventory.data?.['hosts.ini']).toBe(await golden('virtlet-hosts.ini'));
    const status = await readProvisioning(cluster.kubeConfig, namespace, 'vms');
    expect(status.status?.nodes?.map((n) => [n.label, n.ip, n.source])).toEqual([
      ['vm-master', '10.244.1.5', 'virtlet-pod'],
      ['vm-worker', '172.16.0.9', 'virtlet-pod'],
    ]);
  });

  it('builds a masters-only cluster, every master also a worker', async () => {
    const namespace = cluster.namespace;
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'solo-1',
      namespace,
      bootMac: 'aa:bb:cc:00:03:01',
      nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:03:01', ip: '10.10.30.1' }],
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'solo-2',
      namespace,
      bootMac: 'aa:bb:cc:00:03:02',
      nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:03:02', ip: '10.10.30.2' }],
    });
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'solo',
        namespace,
        cluster: 'solo',
        masters: [
          { label: 'solo-1', mac: 'aa:bb:cc:00:03:01' },
          { label: 'solo-2', mac: 'aa:bb:cc:00:03:02' },
        ],
      }),
    );
    await harness.publish(sourceEvent('add', created));
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const inventory = await core.readNamespacedConfigMap({ name: 'solo-inventory', namespace });
    expect(inventory.data?.['hosts.ini']).toBe(await golden('masters-only-hosts.ini'));

    await releaseKudJob(harness.functionsNamespace, 'solo', 0);
    expect(
      (await waitForJobEnd(cluster.kubeConfig, harness.functionsNamespace, 'kud-solo')).ended,
    ).toMatchObject({
      type: 'Complete',
      reason: 'CompletionsReached',
    });
    const [ready] = await harness.publish(
      await jobUpdateEvent(cluster.kubeConfig, harness.functionsNamespace, 'kud-solo'),
    );
    expect(ready?.reply?.type).toBe(EventTypes.clusterReady);
    const ips = await core.readNamespacedConfigMap({ name: 'solo-configmap', namespace });
    expect(ips.data).toEqual({
      'MASTER_solo-1': '10.10.30.1',
      'MASTER_solo-2': '10.10.30.2',
      'WORKER_solo-1': '10.10.30.1',
      'WORKER_solo-2': '10.10.30.2',
    });
  }, 240_000);

  it('reports a failed KUD Job with the contract message, an Event and provisioning.failed', async () => {
    const namespace = cluster.namespace;
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'doomed-1',
      namespace,
      bootMac: 'aa:bb:cc:00:04:01',
      nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:04:01', ip: '10.10.40.1' }],
    });
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'doomed',
        namespace,
        cluster: 'doomed',
        masters: [{ label: 'd-1', mac: 'aa:bb:cc:00:04:01' }],
      }),
    );
    await harness.publish(sourceEvent('add', created));
    await releaseKudJob(harness.functionsNamespace, 'doomed', 1);
    expect(
      (await waitForJobEnd(cluster.kubeConfig, harness.functionsNamespace, 'kud-doomed')).ended,
    ).toMatchObject({
      type: 'Failed',
      reason: 'BackoffLimitExceeded',
    });
    const [failed] = await harness.publish(
      await jobUpdateEvent(cluster.kubeConfig, harness.functionsNamespace, 'kud-doomed'),
    );
    expect(failed?.reply?.type).toBe(EventTypes.provisioningFailed);
    // The contract's text, then the failed pod's name (contract section 10).
    const [pod] = (
      await cluster.kubeConfig
        .makeApiClient(CoreV1Api)
        .listNamespacedPod({ namespace: harness.functionsNamespace, labelSelector: 'job-name=kud-doomed' })
    ).items;
    const message = `Job Failed, KUD not installed in Cluster doomed, check pod logs (pod ${pod?.metadata?.name})`;
    expect(pod?.metadata?.name).toMatch(/^kud-doomed-[a-z0-9]{5}$/);
    expect(failed?.reply?.data).toMatchObject({ step: 'KudInstalled', reason: 'JobFailed', message });
    const status = await readProvisioning(cluster.kubeConfig, namespace, 'doomed');
    expect(conditionOf(status, 'KudInstalled')).toMatchObject({ status: 'False', message });
    expect(conditionOf(status, 'Ready')).toMatchObject({ status: 'False', reason: 'JobFailed', message });
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const events = await core.listNamespacedEvent({ namespace });
    expect(
      events.items.find((e) => e.involvedObject.name === 'doomed' && e.reason === 'JobFailed'),
    ).toMatchObject({
      type: 'Warning',
      message,
    });
    await expect(core.readNamespacedConfigMap({ name: 'doomed-configmap', namespace })).rejects.toMatchObject(
      { code: 404 },
    );
    // The Job is left for its logs; a repeat of its update changes nothing.
    const again = await harness.publish(
      await jobUpdateEvent(cluster.kubeConfig, harness.functionsNamespace, 'kud-doomed'),
    );
    expect(again.map((d) => d.status)).toEqual([204]);
    const batch = cluster.kubeConfig.makeApiClient(BatchV1Api);
    expect(
      (await batch.readNamespacedJob({ name: 'kud-doomed', namespace: harness.functionsNamespace })).status
        ?.failed,
    ).toBe(1);
    // The pod logs the message points at are there: the installer's own last line.
    expect(await jobPodLog(cluster.kubeConfig, harness.functionsNamespace, 'kud-doomed')).toContain(
      '[kud-installer test image] released: exit 1',
    );
  }, 240_000);
});

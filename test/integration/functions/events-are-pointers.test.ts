/**
 * Events are pointers, and the functions never adopt (contract section 10). Anyone who can post
 * to the broker can forge a chain event; a replay is a stale one. Every handler reads what the
 * event names and acts on what the API says: a forged or stale hosts.resolved or
 * inventory.rendered launches nothing and changes nothing. Objects the functions did not create
 * (a user's own `<cluster>-inventory`, `<cluster>-configmap` or `kud-<cluster>`) are left untouched
 * and reported as ObjectConflict.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { CloudEvent } from 'cloudevents';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { pastOwnershipGrace } from '../../support/ownership.js';
import { ChainHarness, sourceEvent } from './support/chain-harness.js';
import {
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  readProvisioning,
  type StoredProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster();
const mac = (i: number) => `cc:00:00:00:00:${String(i).padStart(2, '0')}`;

describe('events are pointers; nothing is adopted', () => {
  let harness: ChainHarness;
  const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
  const batch = () => cluster.kubeConfig.makeApiClient(BatchV1Api);
  const ns = () => cluster.namespace;
  const refOf = (p: StoredProvisioning, generation = p.metadata.generation) => ({
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    uid: p.metadata.uid,
    generation,
  });
  const forged = (type: string, data: Record<string, unknown>) =>
    new CloudEvent<unknown>({ type, source: '/someone/else', datacontenttype: 'application/json', data });
  const forgedNodes = [
    { label: 'm', roles: ['master', 'worker'], mac: mac(99), ip: '203.0.113.66', source: 'host-nics' },
  ];
  const configMapsOf = async (clusterName: string) =>
    (await core().listNamespacedConfigMap({ namespace: ns(), labelSelector: `cluster=${clusterName}` }))
      .items;
  const jobsOf = async (clusterName: string) =>
    (await batch().listNamespacedJob({ namespace: ns(), labelSelector: `cluster=${clusterName}` })).items;
  const provisioning = (name: string, i: number) =>
    createProvisioning(
      cluster.kubeConfig,
      provisioningObject({ name, namespace: ns(), cluster: name, masters: [{ label: 'm', mac: mac(i) }] }),
    );

  beforeAll(async () => {
    for (let i = 1; i <= 9; i++)
      await createBareMetalHost(cluster.kubeConfig, {
        name: `h-${i}`,
        namespace: ns(),
        bootMac: mac(i),
        nics: [{ name: 'eth0', mac: mac(i), ip: `10.30.0.${i}` }],
      });
    harness = new ChainHarness(cluster.kubeConfig, { BMH_NAMESPACE: ns(), IP_SOURCES: 'nics' });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
  });
  afterAll(() => harness?.stop());

  it('a forged hosts.resolved for a Provisioning whose hosts are not resolved changes nothing', async () => {
    const target = await provisioning('forged-hosts', 1);
    const deliveries = await harness.publish(
      forged(EventTypes.hostsResolved, {
        provisioning: refOf(target),
        cluster: 'forged-hosts',
        clusterType: 'baremetal',
        nodes: forgedNodes,
      }),
    );
    expect(deliveries.map((d) => [d.target, d.status])).toEqual([['inventory-render', 204]]);
    expect(await configMapsOf('forged-hosts')).toEqual([]);
    expect(await jobsOf('forged-hosts')).toEqual([]);
    const after = await readProvisioning(cluster.kubeConfig, ns(), 'forged-hosts');
    expect(after.metadata.resourceVersion).toBe(target.metadata.resourceVersion);
  });

  it('a forged hosts.resolved with other IPs for a resolved Provisioning renders the recorded nodes', async () => {
    const target = await provisioning('resolved', 2);
    await harness.publish(sourceEvent('add', target));
    const inventory = async () =>
      (await core().readNamespacedConfigMap({ name: 'resolved-inventory', namespace: ns() })).data?.[
        'hosts.ini'
      ];
    const before = await inventory();
    expect(before).toContain('ansible_ssh_host=10.30.0.2');
    // At best a duplicate: the forged IP never reaches an inventory.
    const deliveries = await harness.publish(
      forged(EventTypes.hostsResolved, {
        provisioning: refOf(target),
        cluster: 'resolved',
        clusterType: 'baremetal',
        nodes: forgedNodes,
      }),
    );
    expect(deliveries.map((d) => [d.target, d.status])).toEqual([['inventory-render', 204]]);
    expect(await inventory()).toBe(before);
    expect((await configMapsOf('resolved')).map((c) => c.metadata?.name)).toEqual(['resolved-inventory']);
  });

  it('a stale hosts.resolved (an older generation) and one naming another cluster change nothing', async () => {
    const target = await provisioning('stale', 3);
    await harness.publish(sourceEvent('add', target));
    const live = await readProvisioning(cluster.kubeConfig, ns(), 'stale');
    const stale = await harness.publish(
      forged(EventTypes.hostsResolved, {
        provisioning: refOf(target, target.metadata.generation + 1),
        cluster: 'stale',
        clusterType: 'baremetal',
        nodes: forgedNodes,
      }),
    );
    const otherCluster = await harness.publish(
      forged(EventTypes.hostsResolved, {
        provisioning: refOf(target),
        cluster: 'victim',
        clusterType: 'baremetal',
        nodes: forgedNodes,
      }),
    );
    expect([...stale, ...otherCluster].map((d) => d.status)).toEqual([204, 204]);
    expect(await configMapsOf('victim')).toEqual([]);
    expect((await readProvisioning(cluster.kubeConfig, ns(), 'stale')).metadata.resourceVersion).toBe(
      live.metadata.resourceVersion,
    );
  });

  it('leaves a user’s own <cluster>-inventory untouched and reports ObjectConflict naming it', async () => {
    await core().createNamespacedConfigMap({
      namespace: ns(),
      body: {
        metadata: { name: 'mine-inventory', labels: { cluster: 'mine' } },
        data: { 'hosts.ini': 'my own\n' },
      },
    });
    const before = await core().readNamespacedConfigMap({ name: 'mine-inventory', namespace: ns() });
    const target = await provisioning('mine', 4);
    const deliveries = await harness.publish(sourceEvent('add', target));
    // Younger than the ownership grace, it may be a concurrent delivery's, its uid not recorded
    // yet: a transient OwnershipPending (503, the broker retries), nothing written.
    expect(deliveries.map((d) => [d.target, d.status, d.reply?.type])).toEqual([
      ['host-lookup', 200, EventTypes.hostsResolved],
      ['inventory-render', 503, undefined],
    ]);
    expect(
      (await core().readNamespacedConfigMap({ name: 'mine-inventory', namespace: ns() })).metadata
        ?.resourceVersion,
    ).toBe(before.metadata?.resourceVersion);
    // Past the grace, the broker's retry of that delivery: a look-alike.
    await pastOwnershipGrace(before.metadata);
    const retried = await harness.deliver('inventory-render', deliveries[0]!.reply!);
    expect([retried.status, retried.reply?.type]).toEqual([200, EventTypes.provisioningFailed]);
    const after = await core().readNamespacedConfigMap({ name: 'mine-inventory', namespace: ns() });
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect(after.data).toEqual({ 'hosts.ini': 'my own\n' });
    const status = await readProvisioning(cluster.kubeConfig, ns(), 'mine');
    expect(conditionOf(status, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ObjectConflict',
      message: expect.stringContaining(
        `ConfigMap ${ns()}/mine-inventory already exists and was not created by bpa-functions`,
      ),
    });
    expect(await jobsOf('mine')).toEqual([]);
  }, 120_000);
});

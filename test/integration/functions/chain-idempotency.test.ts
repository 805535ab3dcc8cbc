/**
 * Duplicates, replays, out-of-order delivery, a spec change while the Job runs, and the sweep
 * recovering dropped events: one Job, one inventory ConfigMap in each namespace (the tenant's
 * copy, and the one the Job mounts in the functions' namespace: contract section 12), nothing
 * restarted twice.
 *
 * The KUD Jobs run on the run's node and end by the real Job controller: their image's installer
 * (kud-waits, test/fixtures/node/kud-installers) runs until the test releases it with exit 0, so
 * "a running Job" is really running. Nothing writes a Job's status but the Job controller.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { BatchV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { useTestCluster } from '../../support/cluster.js';
import {
  createKudSshKeySecret,
  describeOnNode,
  kudTestImage,
  releaseKudJob,
  waitForJobEnd,
} from '../../support/node.js';
import {
  ChainHarness,
  jobUpdateEvent,
  pingEvent,
  routesFor,
  sourceEvent,
  type Delivery,
} from './support/chain-harness.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster();

describeOnNode('idempotency and the sweep', () => {
  let harness: ChainHarness;
  const batch = () => cluster.kubeConfig.makeApiClient(BatchV1Api);
  const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
  /** The functions' namespace: the KUD Jobs run there and mount what is written there. */
  const fns = () => harness.functionsNamespace;
  /** The cluster's Jobs, wherever they are (none may be in the tenant's namespace). */
  const jobsOf = async (name: string) => [
    ...(await batch().listNamespacedJob({ namespace: fns(), labelSelector: `cluster=${name}` })).items,
    ...(await batch().listNamespacedJob({ namespace: cluster.namespace, labelSelector: `cluster=${name}` }))
      .items,
  ];
  /** The cluster's ConfigMaps in the tenant's namespace. */
  const inventoriesOf = async (name: string) =>
    (await core().listNamespacedConfigMap({ namespace: cluster.namespace, labelSelector: `cluster=${name}` }))
      .items;
  /** The cluster's ConfigMaps in the functions' namespace (what the Job mounts). */
  const mountedOf = async (name: string) =>
    (await core().listNamespacedConfigMap({ namespace: fns(), labelSelector: `cluster=${name}` })).items;

  beforeAll(async () => {
    const namespace = cluster.namespace;
    // h-5 is quiet's own: one owner per host (contract section 12), dup holds h-1.
    for (let i = 1; i <= 5; i++) {
      const mac = `ab:ab:00:00:00:0${i}`;
      await createBareMetalHost(cluster.kubeConfig, {
        name: `h-${i}`,
        namespace,
        bootMac: mac,
        nics: [{ name: 'eth0', mac, ip: `10.20.0.${i}` }],
      });
    }
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: namespace,
      SWEEP_NAMESPACES: namespace,
      KUD_IMAGE: kudTestImage.waits,
    });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
    // The KUD Job mounts the operator's key, in the functions' namespace (contract section 12).
    await createKudSshKeySecret(cluster.kubeConfig, fns());
  });
  afterAll(() => harness?.stop());

  /** The 5xx answers publishAsBroker retried, in order. */
  const retried: Delivery[] = [];
  /**
   * harness.publish, with the broker's retries of a 5xx answer (the Triggers' delivery of
   * manifests/eventing: 5 retries, exponential from 0.5 s); each retried answer is kept in `retried`.
   */
  async function publishAsBroker(event: CloudEvent<unknown>): Promise<Delivery[]> {
    const made: Delivery[] = [];
    const queue = [event];
    while (queue.length > 0) {
      const next = queue.shift() as CloudEvent<unknown>;
      for (const target of routesFor(next).filter((name) => harness.servers.has(name))) {
        let delivery = await harness.deliver(target, next);
        for (let retry = 0; delivery.status >= 500 && retry < 5; retry++) {
          retried.push(delivery);
          await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** retry));
          delivery = await harness.deliver(target, next);
        }
        made.push(delivery);
        if (delivery.reply) queue.push(delivery.reply);
      }
    }
    return made;
  }

  it('delivers the same add 5 times and out of order with its updates: one Job, one inventory, the same replies', async () => {
    const namespace = cluster.namespace;
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'dup',
        namespace,
        cluster: 'dup',
        masters: [{ label: 'm', mac: 'ab:ab:00:00:00:01' }],
        workers: [{ label: 'w', mac: 'ab:ab:00:00:00:02' }],
      }),
    );
    const add = sourceEvent('add', created);
    const runs = await Promise.all(Array.from({ length: 5 }, () => publishAsBroker(add)));
    // The same event gets the same reply (same id: shared/k8s/step-causes.ts), so every copy
    // of the add is answered with the one hosts.resolved, and every copy of that with the one
    // inventory.rendered. kud.job.launched (for observers only) comes from the launch itself.
    // A copy that finds the object another copy just created, its uid not recorded yet, cannot
    // tell it from a look-alike (ownership by uid, contract section 12): a transient
    // OwnershipPending (503), and the broker's retry gets the same reply.
    expect(
      retried.map((d) => [
        d.target,
        d.status,
        (JSON.parse(d.body) as { error?: { reason?: string } }).error?.reason,
      ]),
    ).toEqual(retried.map((d) => [d.target, 503, 'OwnershipPending']));
    const replies = runs.flat().flatMap((d) => (d.reply ? [d.reply] : []));
    const idsOf = (type: string) => [...new Set(replies.filter((r) => r.type === type).map((r) => r.id))];
    expect(replies.filter((r) => r.type === EventTypes.hostsResolved)).toHaveLength(5);
    expect(idsOf(EventTypes.hostsResolved)).toHaveLength(1);
    expect(replies.filter((r) => r.type === EventTypes.inventoryRendered)).toHaveLength(5);
    expect(idsOf(EventTypes.inventoryRendered)).toHaveLength(1);
    expect(replies.filter((r) => r.type === EventTypes.kudJobLaunched)).toHaveLength(1);
    expect(runs.flat().every((d) => d.status === 200 || d.status === 204)).toBe(true);
    const [job] = await jobsOf('dup');
    expect(await jobsOf('dup')).toHaveLength(1);
    expect((await inventoriesOf('dup')).map((cm) => cm.metadata?.name)).toEqual(['dup-inventory']);
    expect((await mountedOf('dup')).map((cm) => cm.metadata?.name)).toEqual(['dup-inventory']);

    // Every event of the run again, newest first, mixed with stale and fresh updates: a replay
    // of an event gets its own reply again (no new event id), anything else nothing.
    const replyIds = new Set(replies.map((r) => r.id));
    const chainEvents = [...replies];
    const live = await readProvisioning(cluster.kubeConfig, namespace, 'dup');
    const shuffled: CloudEvent<unknown>[] = [
      ...chainEvents.reverse(),
      sourceEvent('update', live),
      sourceEvent('update', created),
      add,
    ];
    for (const event of shuffled) {
      const deliveries = await harness.publish(event);
      for (const delivery of deliveries)
        if (delivery.status !== 204) {
          expect(delivery.status).toBe(200);
          expect(replyIds.has(delivery.reply?.id ?? '')).toBe(true);
        }
    }
    // The updates (other events than the ones that did the steps) got nothing.
    const updates = harness.deliveries.filter(
      (d) => d.event === shuffled.at(-3) || d.event === shuffled.at(-2),
    );
    expect(updates.map((d) => d.status)).toEqual([204, 204]);
    const jobs = await jobsOf('dup');
    expect(jobs.map((j) => j.metadata?.uid)).toEqual([job?.metadata?.uid]);
    expect(await inventoriesOf('dup')).toHaveLength(1);
    expect(await mountedOf('dup')).toHaveLength(1);
  });

  it('re-runs the chain on a spec change, leaves a running Job alone and replaces it once finished', async () => {
    const namespace = cluster.namespace;
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'grow',
        namespace,
        cluster: 'grow',
        masters: [{ label: 'm', mac: 'ab:ab:00:00:00:03' }],
      }),
    );
    await harness.publish(sourceEvent('add', created));
    const [first] = await jobsOf('grow');

    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const current = await readProvisioning(cluster.kubeConfig, namespace, 'grow');
    const changed = (await custom.replaceNamespacedCustomObject({
      ...bpaGroup,
      plural: 'provisionings',
      namespace,
      name: 'grow',
      body: {
        ...current,
        spec: { ...current.spec, workers: [{ w: { 'mac-address': 'ab:ab:00:00:00:04' } }] },
      },
    })) as typeof current;
    expect(changed.metadata.generation).toBe(2);
    const rerun = await harness.publish(sourceEvent('update', changed));
    expect(rerun.map((d) => [d.target, d.status, d.reply?.type])).toEqual([
      ['host-lookup', 200, EventTypes.hostsResolved],
      ['inventory-render', 200, EventTypes.inventoryRendered],
      ['kud-job-launch', 204, undefined],
    ]);
    let status = await readProvisioning(cluster.kubeConfig, namespace, 'grow');
    expect(conditionOf(status, 'JobLaunched')).toMatchObject({
      status: 'False',
      reason: 'PreviousJobRunning',
      observedGeneration: 2,
    });
    expect((await jobsOf('grow')).map((j) => j.metadata?.uid)).toEqual([first?.metadata?.uid]);

    // The old Job finishes: its completion belongs to generation 1 and announces nothing.
    await releaseKudJob(fns(), 'grow', 0);
    expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-grow')).ended).toMatchObject({
      type: 'Complete',
    });
    expect(
      (await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-grow'))).map(
        (d) => d.status,
      ),
    ).toEqual([204]);

    // The sweep re-drives the launch; the finished Job with the old inventory is replaced.
    harness.collector.drain();
    await harness.publish(pingEvent());
    const sent = harness.collector.drain();
    expect(sent.map((e) => [e.type, e.subject])).toEqual([
      [EventTypes.inventoryRendered, `namespaces/${namespace}/provisionings/grow`],
    ]);
    const relaunch = await harness.publish(sent[0] as CloudEvent<unknown>);
    expect(relaunch[0]?.reply?.type).toBe(EventTypes.kudJobLaunched);
    expect(relaunch[0]?.reply?.data).toMatchObject({ outcome: 'replaced' });
    const jobs = await jobsOf('grow');
    expect(jobs).toHaveLength(1);
    expect(jobs[0]?.metadata?.uid).not.toBe(first?.metadata?.uid);
    expect(jobs[0]?.metadata?.annotations?.['bpa.akraino.org/provisioning-generation']).toBe('2');
    status = await readProvisioning(cluster.kubeConfig, namespace, 'grow');
    expect(conditionOf(status, 'JobLaunched')).toMatchObject({ status: 'True', observedGeneration: 2 });
  }, 240_000);

  it('recovers dropped events from the sweep: a Provisioning never announced, a Job completion never seen', async () => {
    const namespace = cluster.namespace;
    // Created while "the source was down": no add event at all.
    await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'quiet',
        namespace,
        cluster: 'quiet',
        masters: [{ label: 'm', mac: 'ab:ab:00:00:00:05' }],
      }),
    );
    harness.collector.drain();
    await harness.publish(pingEvent());
    const resolved = harness.collector.drain().filter((e) => e.subject?.endsWith('/quiet'));
    expect(resolved.map((e) => e.type)).toEqual([EventTypes.hostsResolved]);
    // The sweep's event goes through the broker to the rest of the chain.
    await harness.publish(resolved[0] as CloudEvent<unknown>);
    expect(await jobsOf('quiet')).toHaveLength(1);

    // The Job completes but its update event is dropped: the next sweep finishes it.
    await releaseKudJob(fns(), 'quiet', 0);
    expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-quiet')).ended).toMatchObject({
      type: 'Complete',
    });
    await harness.publish(pingEvent());
    const ready = harness.collector.drain().filter((e) => e.subject?.endsWith('/quiet'));
    expect(ready.map((e) => e.type)).toEqual([EventTypes.clusterReady]);
    const status = await readProvisioning(cluster.kubeConfig, namespace, 'quiet');
    expect(conditionOf(status, 'Ready')).toMatchObject({ status: 'True' });
    // A further sweep finds nothing to do.
    await harness.publish(pingEvent());
    expect(harness.collector.drain().filter((e) => e.subject?.endsWith('/quiet'))).toEqual([]);
  }, 240_000);
});

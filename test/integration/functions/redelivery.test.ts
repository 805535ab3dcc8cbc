/**
 * Idempotent replies (shared/k8s/step-causes.ts). The broker delivers at least once: a delivery
 * that times out while the function still works (a loaded machine) is delivered again, and the
 * retry finds the step done. Before, it replied nothing, so the chain's next event (sent as the
 * reply of the timed-out request, to nobody) was lost until the sweep: Provisionings stalled
 * after HostsResolved. Now the same event gets the same reply, same id, rebuilt from the API;
 * any other event that finds the step done (a status write's echo) still gets nothing.
 *
 * Real API server, the functions' real HTTP servers; the harness plays the broker's retry by
 * posting the same CloudEvent (same source and id) again and dropping the first reply.
 *
 * And the per-object queue (shared/server/object-queue.ts, issue 26 item 3): an echo of the
 * step's own write that arrives while the step runs waits for it, reads the object once, finds
 * the step done and writes nothing. Every API request host-lookup makes is recorded
 * (RecordingKubeConfig). An echo of a version the step itself wrote (shared/k8s/own-writes.ts),
 * as the API server's own watch shows them, ends without a read.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Watch } from '@kubernetes/client-node';
import { CloudEvent } from 'cloudevents';
import { EventTypes } from '../../../shared/events/types.js';
import { provisioningApiVersion } from '../../../shared/schemas/provisioning.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { RecordingKubeConfig } from '../../support/recording-kube-config.js';
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
/** Polls `done` every 50 ms, for at most 10 s. */
async function until(done: () => boolean) {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the watch');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const mac = (i: number) => `dd:00:00:00:00:${String(i).padStart(2, '0')}`;

describe('a redelivered event gets the reply it got the first time', () => {
  let harness: ChainHarness;
  let recorder: RecordingKubeConfig;
  const ns = () => cluster.namespace;
  const provisioning = (name: string, i: number) =>
    createProvisioning(
      cluster.kubeConfig,
      provisioningObject({ name, namespace: ns(), cluster: name, masters: [{ label: 'm', mac: mac(i) }] }),
    );
  /** The same CloudEvent as the broker's retry sends it: same source, id and data. */
  const again = (event: CloudEvent<unknown>) => new CloudEvent<unknown>({ ...event });

  beforeAll(async () => {
    for (let i = 1; i <= 5; i++)
      await createBareMetalHost(cluster.kubeConfig, {
        name: `h-${i}`,
        namespace: ns(),
        bootMac: mac(i),
        nics: [{ name: 'eth0', mac: mac(i), ip: `10.40.0.${i}` }],
      });
    recorder = new RecordingKubeConfig();
    recorder.loadFromFile(cluster.kubeconfigPath);
    harness = new ChainHarness(recorder, { BMH_NAMESPACE: ns(), IP_SOURCES: 'nics' });
    await harness.start([hostLookup, inventoryRender]);
  });
  afterAll(() => harness?.stop());

  it('host-lookup: the add delivered again after its reply was lost replies hosts.resolved again', async () => {
    const created = await provisioning('lost-reply', 1);
    const add = sourceEvent('add', created);
    const first = await harness.deliver('host-lookup', add);
    expect([first.status, first.reply?.type]).toEqual([200, EventTypes.hostsResolved]);
    // The first reply went to a delivery that timed out; the broker's retry:
    const retry = await harness.deliver('host-lookup', again(add));
    expect([retry.status, retry.reply?.type]).toEqual([200, EventTypes.hostsResolved]);
    expect(retry.reply?.id).toBe(first.reply?.id);
    expect(retry.reply?.data).toEqual(first.reply?.data);

    // The echo of a status write (another event) finds the step done and says nothing.
    const live = await readProvisioning(cluster.kubeConfig, ns(), 'lost-reply');
    const echo = await harness.deliver('host-lookup', sourceEvent('update', live));
    expect([echo.status, echo.reply]).toEqual([204, undefined]);
    // Nor does another add of the same object (another id: not this step's cause).
    const other = await harness.deliver('host-lookup', sourceEvent('add', created));
    expect([other.status, other.reply]).toEqual([204, undefined]);

    // The rebuilt reply goes on down the chain.
    const rendered = await harness.deliver('inventory-render', retry.reply as CloudEvent<unknown>);
    expect(rendered.reply?.type).toBe(EventTypes.inventoryRendered);
    expect(
      conditionOf(await readProvisioning(cluster.kubeConfig, ns(), 'lost-reply'), 'InventoryRendered'),
    ).toMatchObject({ status: 'True', observedGeneration: 1 });
  });

  it('host-lookup: a retry racing the delivery that timed out gets the same reply too', async () => {
    const created = await provisioning('racing-retry', 2);
    const add = sourceEvent('add', created);
    const both = await Promise.all([
      harness.deliver('host-lookup', add),
      harness.deliver('host-lookup', again(add)),
    ]);
    expect(both.map((d) => [d.status, d.reply?.type])).toEqual([
      [200, EventTypes.hostsResolved],
      [200, EventTypes.hostsResolved],
    ]);
    expect(both[0]?.reply?.id).toBe(both[1]?.reply?.id);
  });

  it('host-lookup: an echo arriving while the step runs waits for it, reads once and writes nothing', async () => {
    const created = await provisioning('echo-waits', 4);
    // Another event for the same object (a new id), as the echo of the step's first write is.
    const add = sourceEvent('add', created);
    const echo = sourceEvent('update', created);
    const before = recorder.calls.length;
    const both = await Promise.all([
      harness.deliver('host-lookup', add),
      harness.deliver('host-lookup', echo),
    ]);
    // Whichever the server took first ran the step and replied; the other found it done.
    expect(both.map((d) => [d.status, d.reply?.type]).sort()).toEqual([
      [200, EventTypes.hostsResolved],
      [204, undefined],
    ]);
    const calls = recorder.calls.slice(before).filter((c) => c.namespace === ns());
    const count = (verb: string, resource: string) =>
      calls.filter((c) => c.verb === verb && c.resource === resource).length;
    // At most one read per delivery (none when the server's watch holds the version the event
    // shows: shared/k8s/watched-objects.ts); the step's writes once: one Event, one claim of the
    // one host.
    expect(
      calls.filter((c) => c.verb === 'get' && c.resource === 'provisionings' && c.name === 'echo-waits')
        .length,
    ).toBeLessThanOrEqual(2);
    expect(count('create', 'events')).toBe(1);
    expect(count('patch', 'baremetalhosts')).toBe(1);
  });

  it('host-lookup: the echoes of its own writes end unread; a version it did not write is read', async () => {
    // Every version the API server shows for the object, as the ApiServerSource delivers them.
    const shown: StoredProvisioning[] = [];
    const watch = await new Watch(cluster.kubeConfig).watch(
      `/apis/${provisioningApiVersion}/namespaces/${ns()}/provisionings`,
      { fieldSelector: 'metadata.name=own-echoes' },
      (type: string, object: StoredProvisioning) => {
        if (type === 'MODIFIED') shown.push(object);
      },
      () => undefined,
    );
    try {
      const created = await provisioning('own-echoes', 5);
      const first = await harness.deliver('host-lookup', sourceEvent('add', created));
      expect([first.status, first.reply?.type]).toEqual([200, EventTypes.hostsResolved]);
      const live = await readProvisioning(cluster.kubeConfig, ns(), 'own-echoes');
      await until(() => shown.some((o) => o.metadata.resourceVersion === live.metadata.resourceVersion));
      // The step's writes: the finalizer shows the step not done yet (the data hint
      // `echoOfHandled` skips it), then HostsResolved with the labels the first handling records
      // with its ending.
      const undone = shown.filter((o) => conditionOf(o, 'HostsResolved') === undefined);
      expect(undone.map((o) => (o.metadata as { finalizers?: string[] }).finalizers)).toEqual([
        ['bpa.akraino.org/cleanup'],
      ]);
      const last = shown.at(-1)?.status as Record<string, unknown> | undefined;
      expect(last?.['observedLabels']).toEqual({ cluster: 'own-echoes' });
      const getsOfIt = (from: number) =>
        recorder.calls
          .slice(from)
          .filter((c) => c.verb === 'get' && c.resource === 'provisionings' && c.name === 'own-echoes');

      const before = recorder.calls.length;
      const echoes = [];
      for (const object of shown)
        echoes.push(await harness.deliver('host-lookup', sourceEvent('update', object)));
      expect(echoes.map((d) => [d.status, d.reply])).toEqual(shown.map(() => [204, undefined]));
      // No read at all: each version is one this server's step wrote (shared/k8s/own-writes.ts).
      expect(getsOfIt(before)).toHaveLength(0);
      expect(recorder.calls.slice(before).filter((c) => c.verb !== 'get')).toHaveLength(0);

      // A version the step did not write (the create's) is read, once, and found done.
      const after = recorder.calls.length;
      const other = await harness.deliver('host-lookup', sourceEvent('update', created));
      expect([other.status, other.reply]).toEqual([204, undefined]);
      expect(getsOfIt(after)).toHaveLength(1);
    } finally {
      watch.abort();
    }
  });

  it('inventory-render: hosts.resolved delivered again replies inventory.rendered again; another does not', async () => {
    const created = await provisioning('lost-render', 3);
    const resolved = (await harness.deliver('host-lookup', sourceEvent('add', created)))
      .reply as CloudEvent<unknown>;
    expect(resolved.type).toBe(EventTypes.hostsResolved);
    const first = await harness.deliver('inventory-render', resolved);
    expect([first.status, first.reply?.type]).toEqual([200, EventTypes.inventoryRendered]);
    const retry = await harness.deliver('inventory-render', again(resolved));
    expect([retry.status, retry.reply?.type]).toEqual([200, EventTypes.inventoryRendered]);
    expect(retry.reply?.id).toBe(first.reply?.id);
    expect(retry.reply?.data).toEqual(first.reply?.data);

    // The sweep's own hosts.resolved (a fresh id) finds the inventory rendered: nothing.
    const fresh = new CloudEvent<unknown>({ ...resolved, id: 'sweep-redrive-1' });
    const other = await harness.deliver('inventory-render', fresh);
    expect([other.status, other.reply]).toEqual([204, undefined]);
  });
});

/**
 * Status written by server-side apply (shared/k8s/status-apply.ts, issue 26) against the real
 * kube-apiserver and the shipped CRDs (conditions keyed by `type`): two functions' field managers
 * write their own conditions on one Provisioning and neither apply drops the other's; a field
 * written by a plain update (another writer) survives too; lastTransitionTime moves only when a
 * condition's status does; an apply based on a stale read is refused (409), which the steps rely
 * on to record a success once; the derived Reconciling goes when Ready turns True; a field or a
 * condition another manager wrote is dropped all the same when a change says so; an apply that
 * changes nothing hands back another writer's version, which is not noted as this step's own.
 */
import { describe, expect, it } from '@jest/globals';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { kubeClients } from '../../../shared/k8s/clients.js';
import { applyConditions } from '../../../shared/k8s/condition-writer.js';
import { conditionsOf, findCondition } from '../../../shared/k8s/conditions.js';
import { getCustomObject } from '../../../shared/k8s/custom-objects.js';
import { OwnWrites } from '../../../shared/k8s/own-writes.js';
import { provisioningTarget } from '../../../shared/k8s/provisioning.js';
import { applyStatus, fieldManagerFor } from '../../../shared/k8s/status-apply.js';
import type { StoredObject } from '../../../shared/k8s/stored-object.js';
import { useTestCluster } from '../../support/cluster.js';
import { createOneNodeProvisioning } from '../functions/support/fixtures.js';

const cluster = useTestCluster();

const hostLookup = fieldManagerFor('host-lookup');
const inventoryRender = fieldManagerFor('inventory-render');
const kudJobLaunch = fieldManagerFor('kud-job-launch');

async function newProvisioning(name: string) {
  await createOneNodeProvisioning(cluster.kubeConfig, cluster.namespace, name);
  const clients = kubeClients(cluster.kubeConfig);
  const target = provisioningTarget(cluster.namespace, name);
  const read = async () => {
    const object = await getCustomObject(clients, target);
    if (!object) throw new Error(`Provisioning ${name} is gone`);
    return object;
  };
  return { clients, target, read };
}

/** Another writer's status field, by a plain update (a writer outside the functions: they apply). */
async function writeJobNameAsAnotherWriter(object: StoredObject, jobName: string) {
  await cluster.kubeConfig.makeApiClient(CustomObjectsApi).replaceNamespacedCustomObjectStatus({
    group: 'bpa.akraino.org',
    version: 'v1alpha1',
    plural: 'provisionings',
    namespace: cluster.namespace,
    name: object.metadata.name,
    body: { ...object, status: { ...object.status, jobName } },
  });
}

const ref = (object: StoredObject) => ({
  uid: object.metadata.uid,
  generation: object.metadata.generation ?? 0,
});
const types = (object: StoredObject) => conditionsOf(object).map((c) => c.type);
const managers = (object: StoredObject) =>
  ((object.metadata.managedFields ?? []) as { manager?: string; operation?: string }[]).map(
    (entry) => `${entry.manager}:${entry.operation}`,
  );

describe('status by server-side apply', () => {
  it("keeps another function's conditions and fields when one function applies", async () => {
    const { clients, target, read } = await newProvisioning('coexist');
    let live = await read();
    const resolved = await applyConditions(clients, target, {
      ref: ref(live),
      conditions: [
        { type: 'HostsResolved', status: 'True', reason: 'HostsResolved', message: 'hosts resolved' },
        { type: 'Ready', status: 'Unknown', reason: 'Provisioning', message: 'rendering the inventory' },
      ],
      fields: { nodes: [{ label: 'master-0', role: 'master', mac: '52:54:00:00:00:01', ip: '10.0.0.1' }] },
      manager: hostLookup,
      live,
    });
    expect(resolved.outcome).toBe('written');

    // Another writer's field, by a plain update (a writer outside the functions: the functions apply).
    live = await read();
    await writeJobNameAsAnotherWriter(live, 'kud-coexist');

    live = await read();
    const rendered = await applyConditions(clients, target, {
      ref: ref(live),
      conditions: [
        { type: 'InventoryRendered', status: 'True', reason: 'InventoryRendered', message: 'rendered' },
        { type: 'Ready', status: 'Unknown', reason: 'Provisioning', message: 'launching the KUD Job' },
      ],
      manager: inventoryRender,
      live,
      merge: () => ({ stepCauses: { InventoryRendered: { source: 's', id: '1' } } }),
    });
    expect(rendered.outcome).toBe('written');
    live = await read();
    expect(types(live)).toEqual(expect.arrayContaining(['HostsResolved', 'InventoryRendered', 'Ready']));
    expect(findCondition(conditionsOf(live), 'HostsResolved')?.message).toBe('hosts resolved');
    expect(live.status?.nodes).toHaveLength(1);
    expect(live.status?.jobName).toBe('kud-coexist');
    expect(managers(live)).toEqual(
      expect.arrayContaining([`${hostLookup}:Apply`, `${inventoryRender}:Apply`]),
    );

    // host-lookup applies again with only its step condition: what it owns stays (restated from
    // managedFields), inventory-render's condition and cause stay too.
    const retried = await applyConditions(clients, target, {
      ref: ref(live),
      conditions: [
        { type: 'HostsResolved', status: 'Unknown', reason: 'ApiUnavailable', message: 'retried' },
      ],
      manager: hostLookup,
      live,
    });
    expect(retried.outcome).toBe('written');
    live = await read();
    const conditions = conditionsOf(live);
    expect(findCondition(conditions, 'HostsResolved')?.status).toBe('Unknown');
    expect(findCondition(conditions, 'InventoryRendered')?.status).toBe('True');
    expect(findCondition(conditions, 'Ready')?.message).toBe('launching the KUD Job');
    expect(live.status?.nodes).toHaveLength(1);
    expect(live.status?.stepCauses).toEqual({ InventoryRendered: { source: 's', id: '1' } });
    expect(live.status?.observedGeneration).toBe(live.metadata.generation);
    expect(findCondition(conditions, 'Reconciling')?.status).toBe('True');
  });

  it('moves lastTransitionTime only when the status changes', async () => {
    const { clients, target, read } = await newProvisioning('transitions');
    const at = (iso: string) => new Date(iso);
    const apply = async (status: 'True' | 'False', message: string, now: string) => {
      const live = await read();
      const result = await applyStatus(
        clients,
        target,
        live,
        {
          manager: inventoryRender,
          conditions: [
            {
              type: 'InventoryRendered',
              status,
              reason: status === 'True' ? 'InventoryRendered' : 'ObjectConflict',
              message,
              observedGeneration: live.metadata.generation ?? 0,
            },
          ],
        },
        at(now),
      );
      expect(result.outcome).toBe('written');
      return findCondition(conditionsOf(await read()), 'InventoryRendered')?.lastTransitionTime;
    };
    expect(await apply('False', 'first', '2026-01-01T00:00:00Z')).toBe('2026-01-01T00:00:00Z');
    expect(await apply('False', 'same status, new message', '2026-01-02T00:00:00Z')).toBe(
      '2026-01-01T00:00:00Z',
    );
    expect(await apply('True', 'now True', '2026-01-03T00:00:00Z')).toBe('2026-01-03T00:00:00Z');
  });

  it('refuses an apply based on a stale read (the reply-once precondition)', async () => {
    const { clients, target, read } = await newProvisioning('stale');
    const stale = await read();
    const change = {
      manager: hostLookup,
      conditions: [
        {
          type: 'HostsResolved',
          status: 'True' as const,
          reason: 'HostsResolved',
          message: 'first',
          observedGeneration: 1,
        },
      ],
    };
    expect((await applyStatus(clients, target, stale, change)).outcome).toBe('written');
    // A second delivery that read before the first wrote: refused, so it cannot record it again.
    expect((await applyStatus(clients, target, stale, { ...change, manager: inventoryRender })).outcome).toBe(
      'conflict',
    );
    // applyConditions reads again on the conflict and finds the step done.
    const again = await applyConditions(clients, target, {
      ref: ref(stale),
      conditions: [{ type: 'HostsResolved', status: 'True', reason: 'HostsResolved', message: 'first' }],
      alreadyDone: (conditions) => findCondition(conditions, 'HostsResolved')?.status === 'True',
      manager: hostLookup,
      live: stale,
    });
    expect(again.outcome).toBe('already-done');
  });

  it('notes as its own write only a version its apply stored, not the one a no-op apply hands back', async () => {
    // The echo rule (shared/k8s/own-writes.ts): an event at a version this step wrote is skipped
    // unread. A no-op apply stores nothing and returns the object as it is, at a version another
    // writer may have stored (an install Job's outcome): skipping that one loses its event.
    const { clients, target, read } = await newProvisioning('noop');
    const change = (live: StoredObject) => ({
      manager: kudJobLaunch,
      conditions: [
        {
          type: 'JobLaunched',
          status: 'Unknown' as const,
          reason: 'ApiUnavailable',
          message: 'launching',
          observedGeneration: live.metadata.generation ?? 0,
        },
      ],
    });
    const own = new OwnWrites();
    let live = await read();
    const first = await own.recording(() => applyStatus(clients, target, live, change(live)));
    if (first.outcome !== 'written') throw new Error(`first apply: ${first.outcome}`);
    const firstVersion = first.object.metadata.resourceVersion ?? '';
    expect(firstVersion).not.toBe(live.metadata.resourceVersion);
    expect(own.wrote(first.object.metadata.uid ?? '', firstVersion)).toBe(true);

    // Another writer (a plain update) stores a version of its own.
    await writeJobNameAsAnotherWriter(first.object, 'kud-noop');
    live = await read();
    const othersVersion = live.metadata.resourceVersion ?? '';
    expect(othersVersion).not.toBe(firstVersion);

    // The same apply again changes nothing: the API server hands back the other writer's version.
    const again = await own.recording(() => applyStatus(clients, target, live, change(live)));
    if (again.outcome !== 'written') throw new Error(`second apply: ${again.outcome}`);
    expect(again.object.metadata.resourceVersion).toBe(othersVersion);
    expect(own.wrote(live.metadata.uid ?? '', othersVersion)).toBe(false);
  });

  it('drops the derived Reconciling condition when Ready turns True', async () => {
    const { clients, target, read } = await newProvisioning('ready');
    let live = await read();
    const ready = (status: 'True' | 'Unknown') => ({
      type: 'Ready',
      status,
      reason: status === 'True' ? 'Provisioned' : 'Provisioning',
      message: status,
    });
    await applyConditions(clients, target, {
      ref: ref(live),
      conditions: [ready('Unknown')],
      manager: hostLookup,
      live,
    });
    live = await read();
    expect(types(live)).toContain('Reconciling');
    // Another manager owns the same Reconciling value too: an apply alone could not remove it.
    await applyConditions(clients, target, {
      ref: ref(live),
      conditions: [ready('Unknown')],
      manager: inventoryRender,
      live,
    });
    live = await read();
    await applyConditions(clients, target, {
      ref: ref(live),
      conditions: [ready('True')],
      manager: inventoryRender,
      live,
    });
    live = await read();
    expect(types(live)).not.toContain('Reconciling');
    expect(findCondition(conditionsOf(live), 'Ready')?.status).toBe('True');
  });

  it('drops a field and conditions another manager wrote, as a read-modify-write did', async () => {
    const { clients, target, read } = await newProvisioning('drops');
    let live = await read();
    const releasing = [{ cluster: 'old', since: '2026-01-01T00:00:00Z', launched: true }];
    await applyConditions(clients, target, {
      ref: ref(live),
      conditions: [{ type: 'HostsResolved', status: 'True', reason: 'HostsResolved', message: 'resolved' }],
      fields: { releasingClusters: releasing, retry: '1' },
      manager: hostLookup,
      live,
    });
    live = await read();
    await applyConditions(clients, target, {
      ref: ref(live),
      conditions: [{ type: 'InventoryRendered', status: 'True', reason: 'InventoryRendered', message: 'r' }],
      manager: inventoryRender,
      live,
    });
    // kud-job-launch releases the old name host-lookup recorded: an apply alone cannot drop it.
    live = await read();
    const released = await applyStatus(clients, target, live, {
      manager: kudJobLaunch,
      conditions: [],
      fields: { releasingClusters: undefined },
    });
    expect(released.outcome).toBe('written');
    live = await read();
    expect(live.status?.releasingClusters).toBeUndefined();
    expect(live.status?.retry).toBe('1');
    // A re-run (host-lookup) drops every step condition, its own and inventory-render's.
    const rerun = await applyStatus(clients, target, live, {
      manager: hostLookup,
      conditions: [
        { type: 'Ready', status: 'Unknown', reason: 'Provisioning', message: 'again', observedGeneration: 1 },
      ],
      removeConditions: ['HostsResolved', 'InventoryRendered'],
    });
    expect(rerun.outcome).toBe('written');
    live = await read();
    expect(types(live)).not.toContain('HostsResolved');
    expect(types(live)).not.toContain('InventoryRendered');
    expect(findCondition(conditionsOf(live), 'Ready')?.message).toBe('again');
    expect(live.status?.retry).toBe('1');
  });
});

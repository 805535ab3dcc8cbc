/**
 * What a function's server-side apply of a status carries (shared/k8s/status-apply.ts applyBody):
 * what its manager owns, read back from managedFields, plus the change; never another manager's
 * conditions or fields. The API server's side is test/integration/control-plane/status-apply.test.ts.
 */
import { describe, expect, it } from '@jest/globals';
import { applyBody, ownedStatus } from '../../../shared/k8s/status-apply.js';
import type { StoredObject } from '../../../shared/k8s/stored-object.js';

const condition = (
  type: string,
  status: 'True' | 'False' | 'Unknown',
  reason = type,
  at = '2026-01-01T00:00:00Z',
) => ({
  type,
  status,
  reason,
  message: `${type} ${status}`,
  lastTransitionTime: at,
  observedGeneration: 2,
});

const conditionFields = { '.': {}, 'f:type': {}, 'f:status': {}, 'f:reason': {}, 'f:message': {} };

/** host-lookup applied HostsResolved, Ready and nodes; inventory-render applied InventoryRendered and its cause. */
const live: StoredObject = {
  apiVersion: 'bpa.akraino.org/v1alpha1',
  kind: 'Provisioning',
  metadata: {
    name: 'p',
    namespace: 'n',
    uid: 'u',
    generation: 2,
    resourceVersion: '7',
    managedFields: [
      {
        manager: 'bpa-host-lookup',
        operation: 'Apply',
        subresource: 'status',
        fieldsV1: {
          'f:status': {
            'f:conditions': {
              'k:{"type":"HostsResolved"}': conditionFields,
              'k:{"type":"Ready"}': conditionFields,
            },
            'f:nodes': {},
            'f:stepCauses': { 'f:HostsResolved': {} },
          },
        },
      },
      {
        manager: 'bpa-inventory-render',
        operation: 'Apply',
        subresource: 'status',
        fieldsV1: {
          'f:status': {
            'f:conditions': { 'k:{"type":"InventoryRendered"}': conditionFields },
            'f:stepCauses': { 'f:InventoryRendered': {} },
          },
        },
      },
    ],
  },
  status: {
    observedGeneration: 2,
    nodes: [{ label: 'm0' }],
    jobName: 'kud-p',
    stepCauses: { HostsResolved: { source: 'a', id: '1' }, InventoryRendered: { source: 'b', id: '2' } },
    conditions: [
      condition('HostsResolved', 'True'),
      condition('InventoryRendered', 'True'),
      condition('Ready', 'Unknown', 'Provisioning'),
      condition('Reconciling', 'True', 'Provisioning'),
    ],
  },
};

const types = (status: Record<string, unknown>) =>
  (status.conditions as { type: string }[]).map((c) => c.type).sort();

describe('server-side apply of a status', () => {
  it('reads back what a manager owns, and nothing of the others', () => {
    const owned = ownedStatus(live, 'bpa-inventory-render');
    expect(Object.keys(owned).sort()).toEqual(['conditions', 'stepCauses']);
    expect(owned.stepCauses).toEqual({ InventoryRendered: { source: 'b', id: '2' } });
    expect((owned.conditions as { type: string }[]).map((c) => c.type)).toEqual(['InventoryRendered']);
    expect(ownedStatus(live, 'bpa-kud-job-launch')).toEqual({});
  });

  it("restates the manager's own fields with the change and leaves the others' out", () => {
    const { status, remove } = applyBody(live, {
      manager: 'bpa-host-lookup',
      conditions: [
        {
          type: 'HostsResolved',
          status: 'Unknown',
          reason: 'ApiUnavailable',
          message: 'retried',
          observedGeneration: 2,
        },
      ],
    });
    expect(types(status)).toEqual(['HostsResolved', 'Ready', 'Reconciling']);
    expect(status.nodes).toEqual([{ label: 'm0' }]);
    expect(status.stepCauses).toEqual({ HostsResolved: { source: 'a', id: '1' } });
    expect(status.jobName).toBeUndefined();
    expect(status.observedGeneration).toBe(2);
    expect(remove).toEqual([]);
  });

  it('keeps lastTransitionTime while the status stays, moves it when it changes', () => {
    const now = new Date('2026-02-01T00:00:00Z');
    const same = applyBody(
      live,
      {
        manager: 'bpa-inventory-render',
        conditions: [{ ...condition('InventoryRendered', 'True'), message: 'new' }],
      },
      now,
    ).status.conditions as { type: string; lastTransitionTime: string }[];
    expect(same.find((c) => c.type === 'InventoryRendered')?.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
    const moved = applyBody(
      live,
      {
        manager: 'bpa-inventory-render',
        conditions: [condition('InventoryRendered', 'False', 'ObjectConflict')],
      },
      now,
    ).status.conditions as { type: string; lastTransitionTime: string }[];
    expect(moved.find((c) => c.type === 'InventoryRendered')?.lastTransitionTime).toBe(
      '2026-02-01T00:00:00Z',
    );
  });

  it('merges a map field key by key and drops a key set to undefined', () => {
    const added = applyBody(live, {
      manager: 'bpa-inventory-render',
      conditions: [],
      merge: { stepCauses: { JobLaunched: { source: 'c', id: '3' } } },
    }).status;
    expect(added.stepCauses).toEqual({
      InventoryRendered: { source: 'b', id: '2' },
      JobLaunched: { source: 'c', id: '3' },
    });
    const dropped = applyBody(live, {
      manager: 'bpa-inventory-render',
      conditions: [],
      merge: { stepCauses: { InventoryRendered: undefined } },
    }).status;
    expect(dropped.stepCauses).toBeUndefined();
  });

  it('names the derived condition to remove when Ready turns True', () => {
    const { status, remove } = applyBody(live, {
      manager: 'bpa-kud-job-launch',
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Provisioned', message: 'done', observedGeneration: 2 },
      ],
    });
    expect(types(status)).toEqual(['Ready']);
    expect(remove).toEqual(['Reconciling']);
  });

  it('drops conditions another manager wrote: restated by none, removed by the JSON patch', () => {
    // A re-run of the chain (host-lookup) drops every step condition, whoever wrote it.
    const { status, remove } = applyBody(live, {
      manager: 'bpa-host-lookup',
      conditions: [
        { type: 'Ready', status: 'Unknown', reason: 'Provisioning', message: 'again', observedGeneration: 2 },
      ],
      removeConditions: ['HostsResolved', 'InventoryRendered', 'JobLaunched'],
    });
    // Its own HostsResolved is not restated (so the apply drops it); Reconciling stays derived.
    expect(types(status)).toEqual(['Ready', 'Reconciling']);
    // inventory-render's condition, and its own in case another manager co-owns it.
    expect(remove.sort()).toEqual(['HostsResolved', 'InventoryRendered']);
  });

  it('names the fields set to undefined, to be removed where another manager wrote them', () => {
    const { status, drop } = applyBody(live, {
      manager: 'bpa-kud-job-launch',
      conditions: [],
      fields: { jobName: undefined, job: { phase: 'Running' } },
      merge: { stepCauses: { JobLaunched: undefined } },
    });
    expect(status.jobName).toBeUndefined();
    expect(status.job).toEqual({ phase: 'Running' });
    // A map merged key by key is never dropped whole (other managers' keys live in it).
    expect(drop).toEqual(['jobName']);
  });
});

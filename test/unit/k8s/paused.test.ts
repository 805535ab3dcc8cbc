/**
 * The pause gate (shared/k8s/paused.ts) against a fake custom-objects and events client (unit):
 * what it decides from the live object's annotation and Paused condition, what it writes, and
 * that the Event goes out once per transition. The real API server path is in
 * test/integration/functions/pause.test.ts.
 */
import { describe, expect, it } from '@jest/globals';
import type { KubeClients } from '../../../shared/k8s/clients.js';
import { pausedAnnotation } from '../../../shared/core/lifecycle-names.js';
import {
  awaitsPauseTransition,
  pauseGate,
  pauseTransition,
  PausedCondition,
  unpausedSince,
} from '../../../shared/k8s/paused.js';
import type { StoredObject } from '../../../shared/k8s/stored-object.js';
import type { Condition } from '../../../shared/schemas/kube.js';

const object = (
  annotations: Record<string, string>,
  conditions: Condition[] = [],
  generation = 1,
): StoredObject => ({
  apiVersion: 'bpa.akraino.org/v1alpha1',
  kind: 'Provisioning',
  metadata: { name: 'edge', namespace: 'tenant', uid: 'p-1', generation, resourceVersion: '1', annotations },
  status: { conditions },
});
const paused = (status: Condition['status'], observedGeneration = 1): Condition => ({
  type: PausedCondition,
  status,
  reason: status === 'True' ? 'Paused' : 'Resumed',
  message: 'm',
  observedGeneration,
  lastTransitionTime: '2026-01-01T00:00:00Z',
});

let uids = 0;

type JsonPatchOp = { op: string; path: string };

/**
 * The API server as the gate sees it: one stored object, status applies (server-side apply of one
 * manager: conditions merged by type, other fields set; a JSON patch removes derived conditions),
 * Events created. Each fake holds another uid: recordEvent remembers the Events of the process
 * by object. No managedFields: the gate's write reads the object first.
 */
function fakeApi(initial: StoredObject) {
  let stored: StoredObject = { ...initial, metadata: { ...initial.metadata, uid: `p-${++uids}` } };
  const events: { reason?: string }[] = [];
  let writes = 0;
  const custom = {
    getNamespacedCustomObject: async () => structuredClone(stored),
    patchNamespacedCustomObjectStatus: async ({ body }: { body: StoredObject | JsonPatchOp[] }) => {
      const status = structuredClone(stored.status ?? {});
      const conditions = [...((status.conditions as Condition[] | undefined) ?? [])];
      if (Array.isArray(body)) {
        for (const op of body.filter((o) => o.op === 'remove')) {
          const [, , field, index] = op.path.split('/');
          if (field === 'conditions') conditions.splice(Number(index), 1);
          else if (field !== undefined) delete status[field];
        }
      } else {
        writes++;
        const { conditions: applied = [], ...fields } = (body.status ?? {}) as { conditions?: Condition[] };
        Object.assign(status, fields);
        for (const condition of applied) {
          const index = conditions.findIndex((c) => c.type === condition.type);
          if (index >= 0) conditions[index] = condition;
          else conditions.push(condition);
        }
      }
      stored = {
        ...stored,
        metadata: {
          ...stored.metadata,
          resourceVersion: String(Number(stored.metadata.resourceVersion) + 1),
        },
        status: { ...status, conditions },
      };
      return structuredClone(stored);
    },
  };
  const core = {
    createNamespacedEvent: async ({ body }: { body: { reason?: string } }) => {
      events.push(body);
      return body;
    },
    patchNamespacedEvent: async () => ({}),
  };
  return {
    clients: { custom, core } as unknown as KubeClients,
    events,
    writes: () => writes,
    stored: () => stored,
    annotate: (annotations: Record<string, string>) => {
      stored = { ...stored, metadata: { ...stored.metadata, annotations } };
    },
  };
}

const pausedOf = (o: StoredObject) =>
  (o.status?.conditions as Condition[]).find((c) => c.type === PausedCondition);

describe('pauseTransition', () => {
  it('decides from the annotation (any value, even empty) and the recorded Paused condition', () => {
    expect(pauseTransition(object({}))).toBe('go');
    expect(pauseTransition(object({ [pausedAnnotation]: '' }))).toBe('pause');
    expect(pauseTransition(object({ [pausedAnnotation]: 'false' }))).toBe('pause');
    expect(pauseTransition(object({ [pausedAnnotation]: 'true' }, [paused('True')]))).toBe('paused');
    // The spec changed while paused: the condition is written again for the new generation.
    expect(pauseTransition(object({ [pausedAnnotation]: 'true' }, [paused('True')], 2))).toBe('pause');
    expect(pauseTransition(object({}, [paused('True')]))).toBe('resume');
    expect(pauseTransition(object({}, [paused('False')]))).toBe('go');
    expect(pauseTransition(object({ 'bpa.akraino.org/retry': '1' }))).toBe('go');
  });

  it('marks the events an echo filter must let through: a pause or a resume not recorded yet', () => {
    expect(awaitsPauseTransition(object({ [pausedAnnotation]: '' }))).toBe(true);
    expect(awaitsPauseTransition(object({}, [paused('True')]))).toBe(true);
    expect(awaitsPauseTransition(object({ [pausedAnnotation]: '' }, [paused('True')]))).toBe(false);
    expect(awaitsPauseTransition(object({}, [paused('False')]))).toBe(false);
  });
});

describe('pauseGate', () => {
  const options = { component: 'test' };

  it('stops a paused object, writes Paused True once and sends one Event per transition', async () => {
    const api = fakeApi(object({ [pausedAnnotation]: 'true' }));
    expect(await pauseGate(api.clients, api.stored(), options)).toEqual({ stop: true });
    expect(pausedOf(api.stored())).toMatchObject({ status: 'True', reason: 'Paused', observedGeneration: 1 });
    expect(String(pausedOf(api.stored())?.message)).toContain(pausedAnnotation);
    // kstatus sees it: Reconciling, reason Paused (status-apply derives it on every write).
    const derived = (api.stored().status?.conditions as Condition[]).find((c) => c.type === 'Reconciling');
    expect(derived).toMatchObject({ status: 'True', reason: 'Paused' });
    // The echo of that write, and the next events: stopped, nothing written, no second Event.
    expect(await pauseGate(api.clients, api.stored(), options)).toEqual({ stop: true });
    expect(api.writes()).toBe(1);
    expect(api.events.map((e) => e.reason)).toEqual(['Paused']);
  });

  it('resumes: Paused False (Resumed), one Event, the re-drive asked once, then goes on', async () => {
    const api = fakeApi(object({ [pausedAnnotation]: 'true' }));
    await pauseGate(api.clients, api.stored(), options);
    api.annotate({});
    let redriven = 0;
    const onResume = async () => {
      redriven++;
      return undefined;
    };
    const first = await pauseGate(api.clients, api.stored(), { ...options, onResume });
    expect(first.stop).toBe(false);
    expect(pausedOf(api.stored())).toMatchObject({ status: 'False', reason: 'Resumed' });
    const second = await pauseGate(api.clients, api.stored(), { ...options, onResume });
    expect(second).toEqual({ stop: false, object: api.stored() });
    expect(redriven).toBe(1);
    expect(api.events.map((e) => e.reason)).toEqual(['Paused', 'Resumed']);
  });

  it('writes Paused again for a new generation (the spec changed while paused) without a second Event', async () => {
    const api = fakeApi(object({ [pausedAnnotation]: 'true' }, [paused('True', 1)], 2));
    expect(await pauseGate(api.clients, api.stored(), options)).toEqual({ stop: true });
    expect(pausedOf(api.stored())).toMatchObject({ status: 'True', observedGeneration: 2 });
    expect(api.writes()).toBe(1);
    expect(api.events).toEqual([]);
  });

  it('answers with the re-drive event when the resume has one', async () => {
    const api = fakeApi(object({}, [paused('True')]));
    const reply = { type: 'org.akraino.icn.bpa.hosts.resolved' } as never;
    expect(await pauseGate(api.clients, api.stored(), { ...options, onResume: async () => reply })).toEqual({
      stop: true,
      reply,
    });
  });

  it('decides again on the fresh object: an event read before the annotation was removed does not pause', async () => {
    const api = fakeApi(object({ [pausedAnnotation]: 'true' }));
    const stale = api.stored();
    api.annotate({});
    const result = await pauseGate(api.clients, stale, options);
    expect(result).toEqual({ stop: true });
    expect(api.writes()).toBe(0);
    expect(api.events).toEqual([]);
  });

  it('writes nothing and goes on for an object that was never paused', async () => {
    const api = fakeApi(object({}));
    expect((await pauseGate(api.clients, api.stored(), options)).stop).toBe(false);
    expect(api.writes()).toBe(0);
  });
});

describe('unpausedSince', () => {
  const deleted = '2026-01-01T00:00:00Z';
  const resumedAt = (time: string): Condition => ({ ...paused('False'), lastTransitionTime: time });

  it('counts a wait from the resume when the object was paused after the wait began', () => {
    expect(unpausedSince(object({}, [resumedAt('2026-01-01T01:00:00Z')]), deleted)?.toISOString()).toBe(
      '2026-01-01T01:00:00.000Z',
    );
    // Resumed before the wait began, never paused, or paused still: from the wait's start.
    expect(unpausedSince(object({}, [resumedAt('2025-12-31T00:00:00Z')]), deleted)?.toISOString()).toBe(
      '2026-01-01T00:00:00.000Z',
    );
    expect(unpausedSince(object({}), deleted)?.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(unpausedSince(object({}, [paused('True')]), deleted)?.toISOString()).toBe(
      '2026-01-01T00:00:00.000Z',
    );
  });
});

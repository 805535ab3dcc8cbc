import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { KstatusCondition, withKstatus } from '../core/kstatus.js';
import type { Condition } from '../schemas/kube.js';
import { apiStatusCode, classifyApiError, isConflict, isNotFound } from './api-errors.js';
import type { KubeClients } from './clients.js';
import { conditionsOf, setCondition, type ConditionUpdate } from './conditions.js';
import type { StatusTarget } from './custom-objects.js';
import type { StoredObject } from './stored-object.js';

/**
 * Status written by server-side apply (issue 26): each function applies, as its own field manager
 * (`bpa-<function>`), only the status fields it owns: its conditions (the CRDs key the conditions
 * list by `type`, so another function's conditions are another manager's entries and survive),
 * the kstatus fields derived from the whole status, and its own fields. No read-modify-write of
 * the whole status: the object the step already read is the base.
 *
 * Server-side apply removes what a manager applied before and omits now. So an apply restates what
 * the manager owns (read back from the live object's managedFields, as client-go's Extract does)
 * plus the change; a field set to `undefined` in the change is dropped on purpose.
 */

const applyPatch = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

/** The field manager of a function's applies. */
export const fieldManagerFor = (component: string) => `bpa-${component}`;

export interface StatusApply {
  /** Field manager (fieldManagerFor(function)). */
  manager: string;
  /** Conditions to set; lastTransitionTime is kept from the live object unless the status changes. */
  conditions: ConditionUpdate[];
  /** Other status fields this manager sets; `undefined` drops one it owns. */
  fields?: Record<string, unknown>;
  /**
   * Map fields shared by managers key by key (status.stepCauses: each step its key): merged into
   * what this manager owns of them; an `undefined` value drops the key.
   */
  merge?: Record<string, Record<string, unknown>>;
}

export type ApplyResult =
  | { outcome: 'written'; object: StoredObject }
  /** Someone wrote since `live` was read (resourceVersion precondition): read again, decide again. */
  | { outcome: 'conflict' }
  | { outcome: 'gone' };

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  fieldsV1?: Record<string, unknown>;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The part of `value` the field set names (fieldsV1: `f:<field>`, `k:<list-map key>`; `.` the node itself). */
function extract(value: unknown, fields: Record<string, unknown>): unknown {
  const children = Object.entries(fields).filter(([key]) => key !== '.');
  // A leaf of the set (a scalar, an atomic list or map): the whole value is owned.
  if (children.length === 0) return value;
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    for (const [key, sub] of children) {
      if (!key.startsWith('k:')) continue;
      const id = JSON.parse(key.slice(2)) as Record<string, unknown>;
      const item = value.find((candidate) =>
        Object.entries(id).every(([name, wanted]) => isRecord(candidate) && candidate[name] === wanted),
      );
      if (item !== undefined) items.push({ ...id, ...(extract(item, isRecord(sub) ? sub : {}) as object) });
    }
    return items;
  }
  if (!isRecord(value)) return value;
  const owned: Record<string, unknown> = {};
  for (const [key, sub] of children) {
    if (!key.startsWith('f:')) continue;
    const name = key.slice(2);
    if (name in value) owned[name] = extract(value[name], isRecord(sub) ? sub : {});
  }
  return owned;
}

/** The status fields `manager` owns by apply, with their live values (client-go's Extract). */
export function ownedStatus(live: StoredObject, manager: string): Record<string, unknown> {
  const entries = (live.metadata.managedFields ?? []) as ManagedFieldsEntry[];
  const mine = entries.find(
    (entry) => entry.manager === manager && entry.operation === 'Apply' && entry.subresource === 'status',
  );
  const statusFields = mine?.fieldsV1?.['f:status'];
  if (!isRecord(statusFields)) return {};
  const owned = extract(live.status ?? {}, statusFields);
  return isRecord(owned) ? owned : {};
}

const derivedTypes = new Set<string>([KstatusCondition.reconciling, KstatusCondition.stalled]);

/**
 * What `manager` applies: its owned fields, the change, its conditions with the live
 * lastTransitionTime (moved only when the status changes), and the kstatus fields derived from
 * the whole status as it will be (live plus the change). Also which derived conditions the live
 * object has and the new status must not (removed by a JSON patch: an apply cannot remove an entry
 * other managers share).
 */
export function applyBody(
  live: StoredObject,
  change: StatusApply,
  now: Date = new Date(),
): { status: Record<string, unknown>; remove: string[] } {
  const owned = ownedStatus(live, change.manager);
  let all = conditionsOf(live);
  for (const update of change.conditions) all = setCondition(all, update, now);
  const changedFields: Record<string, unknown> = { ...change.fields };
  for (const [field, entries] of Object.entries(change.merge ?? {})) {
    const merged: Record<string, unknown> = { ...(isRecord(owned[field]) ? owned[field] : {}), ...entries };
    for (const [key, value] of Object.entries(merged)) if (value === undefined) delete merged[key];
    changedFields[field] = Object.keys(merged).length > 0 ? merged : undefined;
  }
  const whole = withKstatus(live, { ...live.status, ...changedFields, conditions: all });
  const derived = conditionsOf({ ...live, status: whole }).filter((c) => derivedTypes.has(c.type));
  const setTypes = new Set([...change.conditions.map((c) => c.type), ...derived.map((c) => c.type)]);
  const ownedConditions = conditionsOf({ ...live, status: owned }).filter(
    (c) => !setTypes.has(c.type) && !derivedTypes.has(c.type),
  );
  const conditions: Condition[] = [
    ...ownedConditions,
    ...all.filter((c) => change.conditions.some((u) => u.type === c.type)),
    ...derived,
  ];
  const status: Record<string, unknown> = { ...owned, ...changedFields, conditions };
  if (whole.observedGeneration !== undefined) status.observedGeneration = whole.observedGeneration;
  for (const [key, value] of Object.entries(status)) if (value === undefined) delete status[key];
  const remove = conditionsOf(live)
    .filter((c) => derivedTypes.has(c.type) && !derived.some((d) => d.type === c.type))
    .map((c) => c.type);
  return { status, remove };
}

/**
 * One server-side apply of `live`'s status by `change.manager`, conditional on `live`'s
 * resourceVersion: an apply with metadata.resourceVersion fails with 409 when the object changed
 * since. The steps need that where a write decides something from what it read: a step's success
 * is recorded (and its reply sent, its Event written) by exactly one delivery, and kstatus is
 * derived from the whole status as read. On 409 the caller reads again and decides again.
 */
export async function applyStatus(
  clients: KubeClients,
  target: StatusTarget,
  live: StoredObject,
  change: StatusApply,
  now: Date = new Date(),
): Promise<ApplyResult> {
  const { group, version, plural } = target.resource;
  const where = `${plural} ${target.namespace}/${target.name}`;
  const { status, remove } = applyBody(live, change, now);
  const request = { group, version, plural, namespace: target.namespace, name: target.name };
  try {
    let stored = (await clients.custom.patchNamespacedCustomObjectStatus(
      {
        ...request,
        body: {
          apiVersion: live.apiVersion ?? `${group}/${version}`,
          kind: live.kind,
          metadata: {
            name: target.name,
            namespace: target.namespace,
            uid: live.metadata.uid,
            resourceVersion: live.metadata.resourceVersion,
          },
          status,
        },
        fieldManager: change.manager,
        force: true,
      },
      applyPatch,
    )) as StoredObject;
    if (remove.length > 0) stored = await removeConditions(clients, request, stored, remove);
    return { outcome: 'written', object: stored };
  } catch (error) {
    if (isConflict(error)) return { outcome: 'conflict' };
    if (isNotFound(error)) return { outcome: 'gone' };
    throw classifyApiError(error, `apply the status of ${where}`);
  }
}

/** Removes derived conditions by index, each guarded by a test of its type (JSON patch). */
async function removeConditions(
  clients: KubeClients,
  request: { group: string; version: string; plural: string; namespace: string; name: string },
  stored: StoredObject,
  types: string[],
): Promise<StoredObject> {
  const list = Array.isArray(stored.status?.conditions) ? (stored.status.conditions as unknown[]) : [];
  const indexes = list
    .map((item, index) => ({ index, type: isRecord(item) ? item.type : undefined }))
    .filter((item) => typeof item.type === 'string' && types.includes(item.type))
    .sort((a, b) => b.index - a.index);
  if (indexes.length === 0) return stored;
  const body = indexes.flatMap(({ index, type }) => [
    { op: 'test', path: `/status/conditions/${index}/type`, value: type },
    { op: 'remove', path: `/status/conditions/${index}` },
  ]);
  try {
    return (await clients.custom.patchNamespacedCustomObjectStatus(
      { ...request, body },
      jsonPatch,
    )) as StoredObject;
  } catch (error) {
    // Best effort: the list moved under us (the test failed) or the write failed; the apply itself
    // is recorded, and the next status write derives kstatus again.
    if (isConflict(error) || isNotFound(error) || apiStatusCode(error) === 422) return stored;
    throw error;
  }
}

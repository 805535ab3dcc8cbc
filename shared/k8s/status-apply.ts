import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { KstatusCondition, withKstatus, type StallRule } from '../core/kstatus.js';
import type { Condition } from '../schemas/kube.js';
import { apiStatusCode, classifyApiError, isConflict, isNotFound } from './api-errors.js';
import type { KubeClients } from './clients.js';
import { conditionsOf, setCondition, type ConditionUpdate } from './conditions.js';
import { getCustomObject, type StatusTarget } from './custom-objects.js';
import { noteWrite } from './own-writes.js';
import type { StoredObject } from './stored-object.js';
import { transient } from '../errors.js';

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
  /**
   * Other status fields this manager sets. `undefined` drops the field, as a read-modify-write
   * did: the apply drops it where this manager owns it, and a JSON patch (a test of the value
   * seen, then a remove) where another manager wrote it.
   */
  fields?: Record<string, unknown>;
  /** Condition types to drop, whoever wrote them (a re-run of the chain drops its step conditions). */
  removeConditions?: string[];
  /**
   * Map fields shared by managers key by key (status.stepCauses: each step its key): merged into
   * what this manager owns of them; an `undefined` value drops the key.
   */
  merge?: Record<string, Record<string, unknown>>;
  /** Which conditions stall the object (kstatus); default the catalogue's (catalogueStall). */
  stalls?: StallRule;
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
 * the whole status as it will be (live plus the change). Also which conditions the live object
 * has and the new status must not (derived ones no longer derived, and `removeConditions`), and
 * which fields the change drops (`drop`): both removed by a JSON patch where the apply alone
 * cannot (an entry or a field another manager wrote).
 */
export function applyBody(
  live: StoredObject,
  change: StatusApply,
  now: Date = new Date(),
): { status: Record<string, unknown>; remove: string[]; drop: string[] } {
  const owned = ownedStatus(live, change.manager);
  const removed = new Set(change.removeConditions ?? []);
  let all = conditionsOf(live).filter((c) => !removed.has(c.type));
  for (const update of change.conditions) all = setCondition(all, update, now);
  const changedFields: Record<string, unknown> = { ...change.fields };
  for (const [field, entries] of Object.entries(change.merge ?? {})) {
    const merged: Record<string, unknown> = { ...(isRecord(owned[field]) ? owned[field] : {}), ...entries };
    for (const [key, value] of Object.entries(merged)) if (value === undefined) delete merged[key];
    changedFields[field] = Object.keys(merged).length > 0 ? merged : undefined;
  }
  const whole = withKstatus(live, { ...live.status, ...changedFields, conditions: all }, change.stalls);
  const derived = conditionsOf({ ...live, status: whole }).filter((c) => derivedTypes.has(c.type));
  const setTypes = new Set([...change.conditions.map((c) => c.type), ...derived.map((c) => c.type)]);
  const ownedConditions = conditionsOf({ ...live, status: owned }).filter(
    (c) => !setTypes.has(c.type) && !derivedTypes.has(c.type) && !removed.has(c.type),
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
    .filter(
      (c) =>
        (derivedTypes.has(c.type) && !derived.some((d) => d.type === c.type)) ||
        (removed.has(c.type) && !change.conditions.some((u) => u.type === c.type)),
    )
    .map((c) => c.type);
  const drop = Object.entries(change.fields ?? {})
    .filter(([, value]) => value === undefined)
    .map(([field]) => field);
  return { status, remove, drop };
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
  const { status, remove, drop } = applyBody(live, change, now);
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
    // Conditional on live's version: a new version is this write's; the same one, a no-op.
    noteWrite(stored, live.metadata.resourceVersion);
    if (remove.length > 0) {
      const before = stored.metadata.resourceVersion;
      stored = noteWrite(await removeConditions(clients, request, stored, remove), before);
    }
    if (drop.length > 0) {
      const before = stored.metadata.resourceVersion;
      stored = noteWrite(await removeFields(clients, request, stored, drop), before);
    }
    return { outcome: 'written', object: stored };
  } catch (error) {
    if (isConflict(error)) return { outcome: 'conflict' };
    if (isNotFound(error)) return { outcome: 'gone' };
    throw classifyApiError(error, `apply the status of ${where}`);
  }
}

/**
 * Removes status fields the apply left (another manager wrote them), each guarded by a test of the
 * value just stored (JSON patch): a field changed since by someone else keeps their newer value.
 */
async function removeFields(
  clients: KubeClients,
  request: { group: string; version: string; plural: string; namespace: string; name: string },
  stored: StoredObject,
  fields: string[],
): Promise<StoredObject> {
  const left = fields.filter((field) => stored.status?.[field] !== undefined);
  if (left.length === 0) return stored;
  const pointer = (field: string) => `/status/${field.replaceAll('~', '~0').replaceAll('/', '~1')}`;
  const body = left.flatMap((field) => [
    { op: 'test', path: pointer(field), value: stored.status?.[field] },
    { op: 'remove', path: pointer(field) },
  ]);
  return patchStatusIfUnchanged(clients, request, stored, body);
}

/** Removes conditions by index, each guarded by a test of its type (JSON patch). */
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
  return patchStatusIfUnchanged(clients, request, stored, body);
}

/**
 * A JSON patch of the status whose `test` operations guard what it removes. Best effort: when
 * what it tests moved under us (422), the object changed (409) or is gone (404), it returns what
 * was read; the apply itself is recorded, and the next status write derives kstatus again.
 */
async function patchStatusIfUnchanged(
  clients: KubeClients,
  request: { group: string; version: string; plural: string; namespace: string; name: string },
  stored: StoredObject,
  body: object[],
): Promise<StoredObject> {
  try {
    return (await clients.custom.patchNamespacedCustomObjectStatus(
      { ...request, body },
      jsonPatch,
    )) as StoredObject;
  } catch (error) {
    if (isConflict(error) || isNotFound(error) || apiStatusCode(error) === 422) return stored;
    throw error;
  }
}

/** What a manager decides to apply on the object it read (StatusApply without the manager). */
export type StatusDecision = Omit<StatusApply, 'manager'>;

export type StatusWriteResult =
  /** Applied; `object` is what the API server stored. */
  | { outcome: 'written'; object: StoredObject }
  /** The decision found nothing to write on the object read. */
  | { outcome: 'unchanged'; object: StoredObject }
  /** The object is gone: whatever the event was about is stale. */
  | { outcome: 'gone' };

/**
 * The one status write of the product: decide on the object read, apply the decision as
 * `manager` conditional on that read's resourceVersion (applyStatus); a 409 (someone wrote since)
 * reads again and decides again, up to `maxAttempts` times (then a transient error, so the event
 * is redelivered). `first`: the object the caller just read, the first attempt's base (no GET);
 * one without managedFields (trimmed by a cache) cannot say what the manager owns, and an apply
 * without that would drop those fields, so it is read whole first.
 */
export async function applyStatusDecided(
  clients: KubeClients,
  target: StatusTarget,
  manager: string,
  decide: (fresh: StoredObject) => StatusDecision | undefined,
  {
    first,
    maxAttempts = 5,
    now = () => new Date(),
  }: { first?: StoredObject; maxAttempts?: number; now?: () => Date } = {},
): Promise<StatusWriteResult> {
  let fresh =
    first && Array.isArray(first.metadata.managedFields) ? first : await getCustomObject(clients, target);
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (!fresh) return { outcome: 'gone' };
    const decision = decide(fresh);
    if (decision === undefined) return { outcome: 'unchanged', object: fresh };
    const result = await applyStatus(clients, target, fresh, { manager, ...decision }, now());
    if (result.outcome !== 'conflict') return result;
    fresh = await getCustomObject(clients, target);
  }
  throw transient(
    'StatusConflict',
    `Could not apply the status of ${target.resource.plural} ${target.namespace}/${target.name}: it kept changing (${maxAttempts} attempts)`,
  );
}

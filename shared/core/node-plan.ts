import { BpaError, invalid } from '../errors.js';
import type { NodeRole } from '../schemas/node.js';
import type { ProvisioningSpec } from '../schemas/provisioning.js';
import { normaliseMac, requireMac } from './mac.js';
import { coreCount, quantityBytes } from './quantity.js';

/**
 * What a node asks of its host's inspected hardware (contract section 14, the preflight in
 * shared/core/preflight.ts): `cpu` cores and `memory`, a Kubernetes quantity kept as written for
 * messages, with its size in bytes.
 */
export interface HardwareRequest {
  cpu?: number;
  memory?: { text: string; bytes: number };
}

/** One node of the cluster before its IP is known. */
export interface PlannedNode {
  label: string;
  mac: string;
  roles: NodeRole[];
  /** Only when the spec gives the node `cpu` or `memory`. */
  requires?: HardwareRequest;
}

/**
 * The nodes of a Provisioning in inventory order (masters in list order, then workers that are
 * not masters in list order), plus the worker labels in the order of the workers list (the
 * `[kube-node]` section keeps that order, masters that are also workers included).
 */
export interface NodePlan {
  nodes: PlannedNode[];
  workerOrder: string[];
}

/** The one label and value of a `{<label>: {...}}` list item (the schema guarantees one key). */
function entryOf<V>(entry: Record<string, V>): [string, V] {
  return Object.entries(entry)[0] as [string, V];
}

type NodeValue =
  { cpu?: number | string | undefined; memory?: number | string | undefined } | null | undefined;

/** The node's `cpu` and `memory`, checked; a bad value is InvalidProvisioning naming the node. */
function requestOf(label: string, value: NodeValue): HardwareRequest | undefined {
  const request: HardwareRequest = {};
  if (value?.cpu !== undefined) {
    const cpu = coreCount(value.cpu);
    if (cpu === undefined)
      throw invalid(
        'InvalidProvisioning',
        `Node ${label}: cpu ${JSON.stringify(value.cpu)} is not a number of cores (a positive integer, e.g. 8)`,
        { node: label },
      );
    request.cpu = cpu;
  }
  if (value?.memory !== undefined) {
    const bytes = quantityBytes(value.memory);
    if (bytes === undefined || bytes === 0)
      throw invalid(
        'InvalidProvisioning',
        `Node ${label}: memory ${JSON.stringify(value.memory)} is not a Kubernetes quantity of memory (e.g. 16Gi, 16384Mi, 16G or 17179869184 bytes)`,
        { node: label },
      );
    request.memory = { text: String(value.memory).trim(), bytes };
  }
  return request.cpu === undefined && request.memory === undefined ? undefined : request;
}

/** A master listed again as a worker with its own cpu/memory: it must meet the larger of each. */
function largerRequest(
  a: HardwareRequest | undefined,
  b: HardwareRequest | undefined,
): HardwareRequest | undefined {
  if (!a || !b) return a ?? b;
  const merged: HardwareRequest = { ...a };
  if (b.cpu !== undefined && (a.cpu === undefined || b.cpu > a.cpu)) merged.cpu = b.cpu;
  if (b.memory && (!a.memory || b.memory.bytes > a.memory.bytes)) merged.memory = b.memory;
  return merged;
}

function macText(value: { 'mac-address'?: string | null | undefined } | null | undefined): string {
  return (value?.['mac-address'] ?? '').trim();
}

const alreadyExists = (label: string, mac: string, reason = 'DuplicateNodeLabel') =>
  new BpaError(
    reason,
    `A node with label ${label} already exists, modify resource and assign a different label to node with MACAddress ${mac}`,
    'invalid',
    { node: label, macAddress: mac },
  );

const sameMac = (mac: string, first: string, second: string) =>
  invalid('DuplicateMacAddress', `MAC address ${mac} is given to both ${first} and ${second}`, {
    macAddress: mac,
    nodes: [first, second],
  });

/** Applies the node rules of contract section 3 (everything that does not need the cluster). */
export function planNodes(spec: ProvisioningSpec): NodePlan {
  const masters = spec.masters ?? [];
  const workers = spec.workers ?? [];
  if (masters.length === 0)
    throw invalid('MastersMissing', 'No master nodes listed: spec.masters must name at least one node');

  const nodes: PlannedNode[] = [];
  const byLabel = new Map<string, PlannedNode>();
  const byMac = new Map<string, PlannedNode>();

  for (const entry of masters) {
    const [label, value] = entryOf(entry);
    const text = macText(value);
    if (text === '')
      throw invalid('MacAddressMissing', `MAC address for masterNode ${label} not provided`, { node: label });
    const mac = requireMac(text, label);
    if (byLabel.has(label)) throw alreadyExists(label, mac);
    const other = byMac.get(mac);
    if (other) throw sameMac(mac, other.label, label);
    const node: PlannedNode = { label, mac, roles: ['master'] };
    const requires = requestOf(label, value);
    if (requires) node.requires = requires;
    nodes.push(node);
    byLabel.set(label, node);
    byMac.set(mac, node);
  }

  const workerOrder: string[] = [];
  const workerLabels = new Set<string>();
  const addWorkerRole = (node: PlannedNode) => {
    if (workerLabels.has(node.label)) {
      throw invalid('DuplicateNodeLabel', `Node ${node.label} is listed more than once as a worker`, {
        node: node.label,
      });
    }
    node.roles.push('worker');
    workerOrder.push(node.label);
    workerLabels.add(node.label);
  };

  if (workers.length === 0) {
    for (const node of [...nodes]) addWorkerRole(node);
    return { nodes, workerOrder };
  }

  for (const entry of workers) {
    const [label, value] = entryOf(entry);
    const text = macText(value);
    const mac = text === '' ? null : requireMac(text, label);
    const existing = byLabel.get(label);
    if (existing) {
      // Same label as a master: "also a worker" when the MAC is absent or the master's own.
      if (existing.roles.includes('master') && (mac === null || mac === existing.mac)) {
        addWorkerRole(existing);
        const requires = largerRequest(existing.requires, requestOf(label, value));
        if (requires) existing.requires = requires;
        continue;
      }
      throw alreadyExists(label, mac ?? existing.mac);
    }
    if (mac === null)
      throw invalid('MacAddressMissing', `MAC address for worker ${label} not provided`, { node: label });
    const other = byMac.get(mac);
    if (other) {
      if (other.roles.includes('master')) throw alreadyExists(label, mac, 'DuplicateMacAddress');
      throw sameMac(mac, other.label, label);
    }
    const node: PlannedNode = { label, mac, roles: [] };
    const requires = requestOf(label, value);
    if (requires) node.requires = requires;
    addWorkerRole(node);
    nodes.push(node);
    byLabel.set(label, node);
    byMac.set(mac, node);
  }
  return { nodes, workerOrder };
}

/**
 * The normalised MACs a Provisioning names, without applying the node rules (planNodes does,
 * later): what a hosts index needs to hold for this cluster. Malformed MACs are left out.
 */
export function nodeMacsOf(spec: ProvisioningSpec): Set<string> {
  const macs = new Set<string>();
  for (const entry of [...(spec.masters ?? []), ...(spec.workers ?? [])]) {
    const mac = normaliseMac(macText(entryOf(entry)[1]));
    if (mac !== null) macs.add(mac);
  }
  return macs;
}

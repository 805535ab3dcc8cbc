import type { ResolvedNode } from '../schemas/node.js';

/**
 * Grow and shrink (contract section 14): what the KUD Job of a launch does, decided from the nodes
 * the cluster has (as the last KUD Job left it) and the nodes the spec now resolves to. Kubespray
 * has three ways to change a running cluster's nodes (its docs/nodes.md):
 * - `scale.yml --limit <new nodes>` joins new workers without touching the rest; it cannot add a
 *   master or an etcd member ("You can NOT use scale.yml for that"), for which `cluster.yml` runs;
 * - `remove-node.yml -e node=<nodes>` drains and resets nodes that are still in the inventory; it
 *   cannot remove the first master (`kube_control_plane[0]`), which holds the cluster's certificates;
 * - `cluster.yml` (the full install) for anything else.
 * Masters are the etcd members here (the inventory puts every master in `[etcd]`), so removing one
 * must leave a quorum: the masters that stay must be a majority of the former set (3 -> 2 is allowed,
 * 2 -> 1 and 1 -> 0 are not), or etcd stops serving writes the moment the member leaves.
 */

/** The path the KUD installer runs (its `--scale` and `--remove-node` arguments, or neither). */
export type KudPath = 'install' | 'scale' | 'remove-node';

export type NodeChange =
  /** A full install (`cluster.yml`): nothing installed yet, or a change only it can make. */
  | { kind: 'install'; why: string }
  /** The cluster already has exactly these nodes. */
  | { kind: 'unchanged' }
  /** New workers, joined with `scale.yml --limit`. */
  | { kind: 'scale'; added: string[] }
  /** Nodes that left the spec, drained then removed with `remove-node.yml -e node=`. */
  | { kind: 'remove-node'; removed: string[] }
  /** A change that would break the cluster or that Kubespray cannot make: nothing is run. */
  | { kind: 'refused'; reason: 'MasterRemovalRefused' | 'MixedNodeChange'; message: string };

const isMaster = (node: ResolvedNode) => node.roles.includes('master');
const sameNode = (a: ResolvedNode, b: ResolvedNode) =>
  a.ip === b.ip && a.mac === b.mac && [...a.roles].sort().join() === [...b.roles].sort().join();
const list = (labels: readonly string[]) => labels.join(', ');

/**
 * The decision. `installed` is undefined when no cluster is known to be installed with the
 * launch's other inputs (no earlier Job, a failed full install, another image, plugins, subnet or
 * installer settings): then only a full install is right.
 */
export function decideNodeChange(
  cluster: string,
  installed: readonly ResolvedNode[] | undefined,
  wanted: readonly ResolvedNode[],
): NodeChange {
  if (!installed) return { kind: 'install', why: `cluster ${cluster} is not installed with these settings` };
  const before = new Map(installed.map((node) => [node.label, node]));
  const after = new Map(wanted.map((node) => [node.label, node]));
  const added = wanted.filter((node) => !before.has(node.label));
  const removed = installed.filter((node) => !after.has(node.label));
  const changed = wanted.filter((node) => {
    const old = before.get(node.label);
    return old !== undefined && !sameNode(old, node);
  });
  if (changed.length > 0)
    return {
      kind: 'install',
      why: `node(s) ${list(changed.map((node) => node.label))} changed address or role`,
    };
  if (added.length === 0 && removed.length === 0) return { kind: 'unchanged' };
  if (added.length > 0 && removed.length > 0)
    return {
      kind: 'refused',
      reason: 'MixedNodeChange',
      message: `Cluster ${cluster}: node(s) ${list(added.map((n) => n.label))} added and ${list(removed.map((n) => n.label))} removed in one change; Kubespray joins (scale.yml) and removes (remove-node.yml) in separate runs: remove first, then add, in two spec changes`,
    };
  const addedMasters = added.filter(isMaster);
  if (addedMasters.length > 0)
    return {
      kind: 'install',
      why: `master(s) ${list(addedMasters.map((node) => node.label))} added: Kubespray joins a master only with a full cluster.yml run`,
    };
  if (added.length > 0) return { kind: 'scale', added: added.map((node) => node.label) };
  const refusal = masterRemovalRefusal(cluster, installed, removed);
  if (refusal) return { kind: 'refused', reason: 'MasterRemovalRefused', message: refusal };
  return { kind: 'remove-node', removed: removed.map((node) => node.label) };
}

/** Why removing these nodes would break the control plane, or undefined when it may go. */
function masterRemovalRefusal(
  cluster: string,
  installed: readonly ResolvedNode[],
  removed: readonly ResolvedNode[],
): string | undefined {
  const masters = installed.filter(isMaster);
  const leaving = removed.filter(isMaster);
  if (leaving.length === 0) return undefined;
  const names = list(leaving.map((node) => node.label));
  const first = masters[0];
  if (first && leaving.some((node) => node.label === first.label))
    return `Removing master ${first.label} from cluster ${cluster} is refused: it is the first master (kube-master[0]), which Kubespray's remove-node.yml cannot remove; keep it in the spec`;
  const remaining = masters.length - leaving.length;
  if (remaining * 2 <= masters.length)
    return `Removing master(s) ${names} from cluster ${cluster} is refused: ${remaining} of ${masters.length} masters would remain, and etcd keeps its quorum only while more than half of the former ${masters.length} stay; remove fewer masters at a time`;
  return undefined;
}

/** The words status uses for a path and its nodes (contract section 14: status names them). */
export function describeNodeChange(change: NodeChange): string {
  switch (change.kind) {
    case 'scale':
      return `adding worker(s) ${list(change.added)} with Kubespray scale.yml`;
    case 'remove-node':
      return `removing node(s) ${list(change.removed)} with Kubespray remove-node.yml (drained first)`;
    case 'install':
      return `full install (cluster.yml): ${change.why}`;
    case 'unchanged':
      return 'no node added or removed';
    case 'refused':
      return change.message;
  }
}

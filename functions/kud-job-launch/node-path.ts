import type { V1Job } from '@kubernetes/client-node';
import { z } from 'zod';
import { renderHostsIni } from '../../shared/core/inventory.js';
import type { KudNodePath } from '../../shared/core/kud-job.js';
import { launchHashAnnotation } from '../../shared/core/lifecycle-names.js';
import { managedByLabel, managedByValue } from '../../shared/core/names.js';
import { decideNodeChange, type KudPath, type NodeChange } from '../../shared/core/node-change.js';
import { carriesOwnerUid } from '../../shared/core/ownership.js';
import { jobState } from '../../shared/k8s/jobs.js';
import { resolvedNodeSchema, type ClusterType, type ResolvedNode } from '../../shared/schemas/node.js';

/**
 * What a KUD Job records about the cluster it works on (contract section 14), on the Job itself in
 * the functions' namespace, which tenants cannot write (section 12): the path it runs, the hash of
 * its settings (everything but the nodes), the nodes the cluster has once it succeeds, and for a
 * scale or remove-node run the nodes it started from (what the cluster still is if it failed).
 */
export const kudPathAnnotation = 'bpa.akraino.org/kud-path';
export const settingsHashAnnotation = 'bpa.akraino.org/settings-hash';
export const clusterNodesAnnotation = 'bpa.akraino.org/cluster-nodes';
export const baseNodesAnnotation = 'bpa.akraino.org/base-nodes';

const nodeSetSchema = z.object({
  nodes: z.array(resolvedNodeSchema).min(1),
  workerOrder: z.array(z.string()),
});
export type NodeSet = z.infer<typeof nodeSetSchema>;

function nodeSetOf(job: V1Job, annotation: string): NodeSet | undefined {
  const text = job.metadata?.annotations?.[annotation];
  if (!text) return undefined;
  try {
    const parsed = nodeSetSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The nodes the cluster has as the existing Job left it, when that Job is this Provisioning's and
 * ran with the same settings: after a success, the nodes it installed; while it runs or after it
 * failed, the nodes a scale or remove-node run started from (a failed full install leaves nothing
 * known). Anything else (another owner, other settings, a Job from before this was recorded):
 * undefined, so only a full install is right.
 */
export function installedNodes(
  existing: V1Job | undefined,
  ownerUid: string,
  settingsHash: string,
): NodeSet | undefined {
  if (!existing || existing.metadata?.labels?.[managedByLabel] !== managedByValue) return undefined;
  if (!carriesOwnerUid(existing.metadata, ownerUid)) return undefined;
  if (existing.metadata?.annotations?.[settingsHashAnnotation] !== settingsHash) return undefined;
  return jobState(existing) === 'complete'
    ? nodeSetOf(existing, clusterNodesAnnotation)
    : nodeSetOf(existing, baseNodesAnnotation);
}

/** What the launch mounts and runs for a decided change (not for a refusal). */
export interface NodePathPlan {
  change: Exclude<NodeChange, { kind: 'refused' }>;
  /** The hosts.ini the Job mounts: remove-node.yml needs the leaving nodes still in it. */
  inventory: string;
  path?: KudNodePath;
  /** Set for an unchanged cluster: the existing Job's launch hash, so that Job is the launch. */
  sameLaunchHash?: string;
  annotations: Record<string, string>;
}

export type NodePathDecision = NodePathPlan | { refused: Extract<NodeChange, { kind: 'refused' }> };

/** The decision (shared/core/node-change.ts) with what the Job needs to carry it out. */
export function planNodePath(input: {
  cluster: string;
  clusterType: ClusterType;
  existing: V1Job | undefined;
  ownerUid: string;
  settingsHash: string;
  wanted: NodeSet;
}): NodePathDecision {
  const installed = installedNodes(input.existing, input.ownerUid, input.settingsHash);
  const change = decideNodeChange(input.cluster, installed?.nodes, input.wanted.nodes);
  if (change.kind === 'refused') return { refused: change };
  const render = (set: NodeSet) =>
    renderHostsIni({ clusterType: input.clusterType, nodes: set.nodes, workerOrder: set.workerOrder });
  const annotations = (kind: KudPath, base?: NodeSet): Record<string, string> => ({
    [kudPathAnnotation]: kind,
    [settingsHashAnnotation]: input.settingsHash,
    [clusterNodesAnnotation]: JSON.stringify(input.wanted),
    ...(base ? { [baseNodesAnnotation]: JSON.stringify(base) } : {}),
  });
  switch (change.kind) {
    case 'scale':
      return {
        change,
        inventory: render(input.wanted),
        path: { kind: 'scale', nodes: change.added },
        annotations: annotations('scale', installed),
      };
    case 'remove-node':
      return {
        change,
        inventory: render(installed as NodeSet),
        path: { kind: 'remove-node', nodes: change.removed },
        annotations: annotations('remove-node', installed),
      };
    case 'unchanged': {
      const hash = input.existing?.metadata?.annotations?.[launchHashAnnotation];
      // Only a succeeded Job's nodes are the cluster's: that Job is the launch.
      if (hash && jobState(input.existing as V1Job) === 'complete')
        return { change, inventory: render(input.wanted), sameLaunchHash: hash, annotations: {} };
      return planFull({ kind: 'install', why: 'the last run did not finish' });
    }
    case 'install':
      return planFull(change);
  }
  function planFull(full: Extract<NodeChange, { kind: 'install' }>): NodePathPlan {
    return { change: full, inventory: render(input.wanted), annotations: annotations('install') };
  }
}

export const nodeSetOfStatus = (nodes: ResolvedNode[], workerOrder: readonly string[]): NodeSet => ({
  nodes,
  workerOrder: [...workerOrder],
});

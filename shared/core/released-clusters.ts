import { z } from 'zod';

/**
 * A renamed cluster (contract section 10: "renaming the cluster of a provisioned Provisioning
 * releases the old name only after its objects are gone"). host-lookup, which sees the label
 * change first, records the old name in `status.releasingClusters`; kud-job-launch's sweep removes
 * that name's objects (its Jobs, `<old>-inventory`, `<old>-configmap`, and, when a KUD Job ran
 * for it, the node directory, by the deletion's cleanup Job), then releases the claim and drops
 * the entry. The new name is claimed meanwhile like any new one.
 */
export const releasingClustersField = 'releasingClusters';

export const releasingClusterSchema = z.object({
  cluster: z.string().min(1),
  /** When the rename was seen: CLEANUP_TIMEOUT_SECONDS counts from here. */
  since: z.string().min(1),
  /** A KUD Job was launched for the old name: its node directory is to be removed. */
  launched: z.boolean(),
});
export type ReleasingCluster = z.infer<typeof releasingClusterSchema>;

/** The old names a status still releases (malformed entries are ignored, never acted on). */
export function releasingClustersOf(
  status: Readonly<Record<string, unknown>> | undefined,
): ReleasingCluster[] {
  const value = status?.[releasingClustersField];
  if (!Array.isArray(value)) return [];
  return value.flatMap((item) => {
    const parsed = releasingClusterSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

/**
 * The names to release after the labels move from `previous` to `next`: `previous` joins the list
 * (once); a name that is the cluster again (renamed back) leaves it, as it is claimed and used.
 */
export function afterRename(
  current: readonly ReleasingCluster[],
  previous: string | undefined,
  next: string | undefined,
  launched: boolean,
  now: Date,
): ReleasingCluster[] {
  const list = current.filter((entry) => entry.cluster !== next);
  if (!previous || previous === next || list.some((entry) => entry.cluster === previous)) return list;
  return [...list, { cluster: previous, since: now.toISOString(), launched }];
}

import { z } from 'zod';

/** Virtlet VM pods carry this annotation. */
export const virtletRuntimeAnnotation = 'kubernetes.io/target-runtime';
export const virtletRuntime = 'virtlet.cloud';
/** Multus network status, current and older annotation names (current first). */
export const networkStatusAnnotations = [
  'k8s.v1.cni.cncf.io/network-status',
  'k8s.v1.cni.cncf.io/networks-status',
] as const;

/** The parts of a Pod the Virtlet path reads; everything else is dropped while parsing. */
export const podSchema = z.object({
  kind: z.literal('Pod').optional(),
  metadata: z.object({
    name: z.string().min(1, 'must not be empty'),
    namespace: z.string().optional(),
    /** The precondition of a claim (shared/k8s/host-claims.ts). */
    resourceVersion: z.string().optional(),
    annotations: z.record(z.string(), z.string()).nullish(),
  }),
  status: z.object({ phase: z.string().optional(), podIP: z.string().nullish() }).nullish(),
});
export type Pod = z.infer<typeof podSchema>;

/** One entry of the Multus network status annotation (a JSON array of these). */
export const networkStatusEntrySchema = z
  .object({
    name: z.string().optional(),
    interface: z.string().optional(),
    ips: z.array(z.string()).nullish(),
    mac: z.string().optional(),
    default: z.boolean().optional(),
  })
  .loose();
export const networkStatusSchema = z.array(networkStatusEntrySchema);
export type NetworkStatusEntry = z.infer<typeof networkStatusEntrySchema>;

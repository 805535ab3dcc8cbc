import { z } from 'zod';

/** A DNS-1123 label: lower-case alphanumerics and '-', starting and ending alphanumeric. */
export const dns1123LabelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A DNS-1123 subdomain (most object names): labels joined by '.'. */
export const dns1123SubdomainPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * A Kubernetes object of one kind: `apiVersion` and `kind` pinned to these literals (anything
 * else fails to parse), then the object's own fields (metadata, spec, status) as given.
 */
export const kubeObjectSchema = <const V extends string, const K extends string, S extends z.core.$ZodShape>(
  apiVersion: V,
  kind: K,
  fields: S,
) => z.object({ apiVersion: z.literal(apiVersion), kind: z.literal(kind), ...fields });

/** The metadata fields the product reads; everything else is kept as is. */
export const objectMetaSchema = z
  .object({
    name: z.string().min(1, 'must not be empty'),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    generation: z.number().int().optional(),
    resourceVersion: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  })
  .loose();
export type ObjectMeta = z.infer<typeof objectMetaSchema>;

/** A status condition as the product writes it (metav1.Condition). */
export const conditionSchema = z.object({
  type: z.string().min(1),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: z.string().optional(),
  observedGeneration: z.number().int().optional(),
});
export type Condition = z.infer<typeof conditionSchema>;

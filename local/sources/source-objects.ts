import { z } from 'zod';
import { kubeObjectSchema } from '../../shared/schemas/kube.js';
import { destinationSchema } from '../broker/knative-objects.js';
import { objectsOfKind } from '../knative-objects.js';

/** metav1.LabelSelector. */
export const labelSelectorSchema = z
  .object({
    matchLabels: z.record(z.string(), z.string()).optional(),
    matchExpressions: z
      .array(
        z.object({
          key: z.string().min(1),
          operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
          values: z.array(z.string()).optional(),
        }),
      )
      .optional(),
  })
  .loose();
export type LabelSelector = z.infer<typeof labelSelectorSchema>;

const metadataSchema = z.object({ name: z.string().min(1), namespace: z.string().min(1).optional() }).loose();
const ceOverridesSchema = z.object({ extensions: z.record(z.string(), z.string()).optional() }).loose();

/** `sources.knative.dev/v1` ApiServerSource, the fields the local adapter reads. */
export const apiServerSourceSchema = kubeObjectSchema('sources.knative.dev/v1', 'ApiServerSource', {
  metadata: metadataSchema,
  spec: z
    .object({
      sink: destinationSchema,
      resources: z
        .array(
          z
            .object({
              apiVersion: z.string().min(1),
              kind: z.string().min(1),
              selector: labelSelectorSchema.optional(),
            })
            .loose(),
        )
        .min(1),
      owner: z.object({ apiVersion: z.string().optional(), kind: z.string().optional() }).loose().optional(),
      mode: z.enum(['Reference', 'Resource']).optional(),
      serviceAccountName: z.string().optional(),
      namespaceSelector: labelSelectorSchema.optional(),
      ceOverrides: ceOverridesSchema.optional(),
    })
    .loose(),
}).loose();
export type ApiServerSourceObject = z.infer<typeof apiServerSourceSchema>;

/** `sources.knative.dev/v1` PingSource. */
export const pingSourceSchema = kubeObjectSchema('sources.knative.dev/v1', 'PingSource', {
  metadata: metadataSchema,
  spec: z
    .object({
      schedule: z.string().min(1).optional(),
      timezone: z.string().min(1).optional(),
      contentType: z.string().min(1).optional(),
      data: z.string().optional(),
      dataBase64: z.string().optional(),
      sink: destinationSchema,
      ceOverrides: ceOverridesSchema.optional(),
    })
    .loose()
    .refine((spec) => !(spec.data !== undefined && spec.dataBase64 !== undefined), {
      message: 'data and dataBase64 are mutually exclusive',
    }),
}).loose();
export type PingSourceObject = z.infer<typeof pingSourceSchema>;

/** Kubernetes objects of one kind of `sources.knative.dev`. */
export const sourcesOfKind = (objects: readonly unknown[], kind: string) =>
  objectsOfKind(objects, 'sources.knative.dev', kind);

/** The label selector query string (`a=b,c in (d,e),!f`). */
export function labelSelectorString(selector: LabelSelector | undefined): string | undefined {
  if (!selector) return undefined;
  const parts = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
  for (const expression of selector.matchExpressions ?? []) {
    const values = (expression.values ?? []).join(',');
    if (expression.operator === 'In') parts.push(`${expression.key} in (${values})`);
    else if (expression.operator === 'NotIn') parts.push(`${expression.key} notin (${values})`);
    else if (expression.operator === 'Exists') parts.push(expression.key);
    else parts.push(`!${expression.key}`);
  }
  return parts.length > 0 ? parts.join(',') : undefined;
}

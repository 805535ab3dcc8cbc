import { z } from 'zod';
import { dns1123SubdomainPattern } from './kube.js';

/**
 * Where a pod may run, as the API server validates it (apimachinery's IsQualifiedName and
 * IsValidLabelValue, core/v1 Toleration): checked when a function starts, so a typo in bpa-config
 * is a clear InvalidConfig then, not a Job the API server refuses at the first launch.
 */

/** The name part of a qualified name and a non-empty label value: 63 characters at most. */
const namePattern = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** A label key (`[prefix/]name`, the prefix a DNS-1123 subdomain): also a taint's key. */
export function isLabelKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash === -1 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length > 253 || !dns1123SubdomainPattern.test(prefix))) return false;
  return name.length <= 63 && namePattern.test(name);
}
const labelKeyMessage =
  'must be a label key ([prefix/]name: a DNS-1123 subdomain, then 1-63 of A-Z a-z 0-9 - _ .)';
export const labelKeySchema = z.string().refine(isLabelKey, { message: labelKeyMessage });

/** A label value: empty, or 1-63 of A-Z a-z 0-9 - _ . starting and ending alphanumeric. */
export const labelValueSchema = z
  .string()
  .refine((value) => value === '' || (value.length <= 63 && namePattern.test(value)), {
    message: 'must be a label value (at most 63 of A-Z a-z 0-9 - _ ., starting and ending alphanumeric)',
  });

/** A pod's nodeSelector: label key to value. */
export const nodeSelectorSchema = z.record(z.string(), labelValueSchema).superRefine((map, ctx) => {
  // Checked here rather than as the record's key schema, whose failure says only "Invalid key".
  for (const key of Object.keys(map))
    if (!isLabelKey(key)) ctx.addIssue({ code: 'custom', path: [key], message: labelKeyMessage });
});
export type NodeSelector = z.infer<typeof nodeSelectorSchema>;

/**
 * One core/v1 Toleration. Strict: an unknown field (`operater`) is an error, not a toleration
 * that silently tolerates nothing; the API server's own rules hold too.
 */
export const tolerationSchema = z
  .strictObject({
    key: labelKeySchema.optional(),
    operator: z.enum(['Exists', 'Equal']).optional(),
    value: labelValueSchema.optional(),
    effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
    tolerationSeconds: z.number().int().optional(),
  })
  .refine((t) => t.key !== undefined || t.operator === 'Exists', {
    message: 'a toleration without a key must have operator Exists (it tolerates every taint)',
  })
  .refine((t) => t.operator !== 'Exists' || !t.value, {
    message: 'a toleration with operator Exists has no value',
  })
  .refine((t) => t.tolerationSeconds === undefined || t.effect === 'NoExecute', {
    message: 'tolerationSeconds is only for effect NoExecute',
  });
export type Toleration = z.infer<typeof tolerationSchema>;
export const tolerationsSchema = z.array(tolerationSchema);

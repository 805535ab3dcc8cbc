import { z } from 'zod';

/**
 * The parts of a metal3.io/v1alpha1 BareMetalHost the product reads; everything else is
 * dropped while parsing. Plain (non-loose) objects on purpose: zod compiles them into a fast
 * validator, which matters with ten thousand hosts per lookup.
 */
export const nicSchema = z.object({
  mac: z.string().optional(),
  ip: z.string().optional(),
  name: z.string().optional(),
});
export type Nic = z.infer<typeof nicSchema>;

export const bareMetalHostSchema = z.object({
  kind: z.literal('BareMetalHost').optional(),
  metadata: z.object({ name: z.string().min(1, 'must not be empty'), namespace: z.string().optional() }),
  spec: z.object({ bootMACAddress: z.string().nullish() }).nullish(),
  status: z.object({ hardware: z.object({ nics: z.array(nicSchema).nullish() }).nullish() }).nullish(),
});
export type BareMetalHost = z.infer<typeof bareMetalHostSchema>;

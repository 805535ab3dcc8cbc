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

/**
 * Metal3's `spec.consumerRef` (a core ObjectReference): who uses the host. Not empty means
 * "in use" (Cluster API's Metal3Machine, or a Provisioning: shared/core/host-claim.ts). Only the
 * fields a claim reads; Metal3's schema also keeps fieldPath and resourceVersion.
 */
export const consumerRefSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  namespace: z.string().optional(),
  name: z.string().optional(),
  uid: z.string().optional(),
});
export type ConsumerRef = z.infer<typeof consumerRefSchema>;

export const bareMetalHostSchema = z.object({
  kind: z.literal('BareMetalHost').optional(),
  metadata: z.object({
    name: z.string().min(1, 'must not be empty'),
    namespace: z.string().optional(),
    /** The precondition of a claim (shared/k8s/host-claims.ts). */
    resourceVersion: z.string().optional(),
  }),
  spec: z
    .object({ bootMACAddress: z.string().nullish(), consumerRef: consumerRefSchema.nullish() })
    .nullish(),
  status: z
    .object({
      /** Inspection's findings: NICs, and the CPU count and memory the preflight compares. */
      hardware: z
        .object({
          nics: z.array(nicSchema).nullish(),
          cpu: z.object({ count: z.number().nullish() }).nullish(),
          ramMebibytes: z.number().nullish(),
        })
        .nullish(),
      /** Metal3's `OK`, `discovered`, `error`, `delayed`, `detached`. */
      operationalStatus: z.string().nullish(),
      /** Metal3's error state (`provisioning error`, `registration error`...); empty when none. */
      errorType: z.string().nullish(),
      /** Metal3's own words about the error. */
      errorMessage: z.string().nullish(),
      /** `state`: `registering` ... `available`, `provisioning`, `provisioned`, `externally provisioned`... */
      provisioning: z.object({ state: z.string().nullish() }).nullish(),
    })
    .nullish(),
});
export type BareMetalHost = z.infer<typeof bareMetalHostSchema>;

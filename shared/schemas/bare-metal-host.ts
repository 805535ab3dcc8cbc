import { z } from 'zod';
import { objectMetaSchema } from './kube.js';

/** The parts of a metal3.io/v1alpha1 BareMetalHost the product reads. Other fields are kept. */
export const nicSchema = z
  .object({ mac: z.string().optional(), ip: z.string().optional(), name: z.string().optional() })
  .loose();
export type Nic = z.infer<typeof nicSchema>;

export const bareMetalHostSchema = z
  .object({
    apiVersion: z.string().optional(),
    kind: z.literal('BareMetalHost').optional(),
    metadata: objectMetaSchema,
    spec: z.object({ bootMACAddress: z.string().nullish() }).loose().nullish(),
    status: z
      .object({
        hardware: z
          .object({ nics: z.array(nicSchema).nullish() })
          .loose()
          .nullish(),
      })
      .loose()
      .nullish(),
  })
  .loose();
export type BareMetalHost = z.infer<typeof bareMetalHostSchema>;

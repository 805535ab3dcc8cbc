import { z } from 'zod';
import { kubeObjectSchema } from '../../shared/schemas/kube.js';

/**
 * The parts of `eventing.knative.dev/v1` Broker and Trigger the embedded broker reads, as they
 * come out of YAML. Unknown fields are kept (`loose`) so real manifests validate unchanged.
 */

/** duckv1.KReference: what a Destination's `ref` names. */
export const kReferenceSchema = z
  .object({
    apiVersion: z.string().min(1),
    kind: z.string().min(1),
    name: z.string().min(1),
    namespace: z.string().min(1).optional(),
  })
  .loose();
export type KReference = z.infer<typeof kReferenceSchema>;

/** duckv1.Destination: `ref`, `uri`, or both (uri resolved relative to the ref's URL). */
export const destinationSchema = z
  .object({
    ref: kReferenceSchema.optional(),
    uri: z.string().min(1).optional(),
    CACerts: z.string().optional(),
    audience: z.string().optional(),
  })
  .loose()
  .refine((destination) => destination.ref !== undefined || destination.uri !== undefined, {
    message: 'a destination needs ref, uri or both',
  });
export type Destination = z.infer<typeof destinationSchema>;

/** eventing duckv1.DeliverySpec. */
export const deliverySpecSchema = z
  .object({
    deadLetterSink: destinationSchema.optional(),
    retry: z.number().int().nonnegative().optional(),
    backoffPolicy: z.enum(['linear', 'exponential']).optional(),
    backoffDelay: z.string().min(1).optional(),
    timeout: z.string().min(1).optional(),
    retryAfterMax: z.string().optional(),
    format: z.enum(['json', 'binary']).optional(),
  })
  .loose();
export type DeliverySpec = z.infer<typeof deliverySpecSchema>;

const attributeMap = z.record(z.string(), z.string());

/** One element of Trigger `spec.filters` (the Subscriptions API dialects). */
export type SubscriptionsApiFilter = {
  exact?: Record<string, string>;
  prefix?: Record<string, string>;
  suffix?: Record<string, string>;
  all?: SubscriptionsApiFilter[];
  any?: SubscriptionsApiFilter[];
  not?: SubscriptionsApiFilter;
  cesql?: string;
};
export const subscriptionsApiFilterSchema: z.ZodType<SubscriptionsApiFilter> = z.lazy(() =>
  z.object({
    exact: attributeMap.optional(),
    prefix: attributeMap.optional(),
    suffix: attributeMap.optional(),
    all: z.array(subscriptionsApiFilterSchema).optional(),
    any: z.array(subscriptionsApiFilterSchema).optional(),
    not: subscriptionsApiFilterSchema.optional(),
    cesql: z.string().optional(),
  }),
);

const metadataSchema = z
  .object({
    name: z.string().min(1),
    namespace: z.string().min(1).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    labels: z.record(z.string(), z.string()).optional(),
  })
  .loose();

export const brokerObjectSchema = kubeObjectSchema('eventing.knative.dev/v1', 'Broker', {
  metadata: metadataSchema,
  spec: z.object({ delivery: deliverySpecSchema.optional() }).loose().optional(),
}).loose();
export type BrokerObject = z.infer<typeof brokerObjectSchema>;

export const triggerObjectSchema = kubeObjectSchema('eventing.knative.dev/v1', 'Trigger', {
  metadata: metadataSchema,
  spec: z
    .object({
      broker: z.string().min(1),
      filter: z.object({ attributes: attributeMap.optional() }).loose().optional(),
      filters: z.array(subscriptionsApiFilterSchema).optional(),
      subscriber: destinationSchema,
      delivery: deliverySpecSchema.optional(),
    })
    .loose(),
}).loose();
export type TriggerObject = z.infer<typeof triggerObjectSchema>;

/** The Broker delivery Knative's `config-br-defaults` gives a Broker that states none. */
export const defaultBrokerDelivery: DeliverySpec = {
  retry: 10,
  backoffPolicy: 'exponential',
  backoffDelay: 'PT0.2S',
};

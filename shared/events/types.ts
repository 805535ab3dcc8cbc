import { z } from 'zod';
import { clusterTypeSchema, resolvedNodeSchema } from '../schemas/node.js';

/**
 * The event catalogue: every CloudEvent type the chain emits, with the zod schema of its
 * `data`. JSON Schema files under shared/events/catalog/ are generated from here
 * (`npm run catalog`) and a test fails when they are stale.
 */
export const EventTypes = {
  hostsResolved: 'org.akraino.icn.bpa.hosts.resolved',
  inventoryRendered: 'org.akraino.icn.bpa.inventory.rendered',
  kudJobLaunched: 'org.akraino.icn.bpa.kud.job.launched',
  clusterReady: 'org.akraino.icn.bpa.cluster.ready',
  softwareInstalled: 'org.akraino.icn.bpa.software.installed',
  provisioningFailed: 'org.akraino.icn.bpa.provisioning.failed',
  softwareFailed: 'org.akraino.icn.bpa.software.failed',
  imageUploaded: 'org.akraino.icn.bpa.image.uploaded',
  imageVerified: 'org.akraino.icn.bpa.image.verified',
  imageFailed: 'org.akraino.icn.bpa.image.failed',
} as const;
export type ChainEventType = (typeof EventTypes)[keyof typeof EventTypes];

/** Knative source event types the functions consume. */
export const SourceEventTypes = {
  resourceAdd: 'dev.knative.apiserver.resource.add',
  resourceUpdate: 'dev.knative.apiserver.resource.update',
  resourceDelete: 'dev.knative.apiserver.resource.delete',
  ping: 'dev.knative.sources.ping',
} as const;

/** The CloudEvent `source` of events the chain emits: `/bpa-functions/<function>`. */
export const eventSource = (functionName: string) => `/bpa-functions/${functionName}`;

/** `subject` of chain events. */
export const provisioningSubject = (namespace: string, name: string) =>
  `namespaces/${namespace}/provisionings/${name}`;
export const softwareSubject = (namespace: string, name: string) =>
  `namespaces/${namespace}/softwares/${name}`;
export const imageSubject = (namespace: string, name: string) => `namespaces/${namespace}/images/${name}`;

/** Identifies the resource generation an event is about; handlers use it for idempotency. */
// Kubernetes names, checked here so a hostile event never reaches an API path or a selector.
const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const resourceRefSchema = z.object({
  namespace: z.string().max(63).regex(dns1123Label, 'a namespace name (DNS-1123 label)'),
  name: z.string().max(253).regex(dns1123Subdomain, 'an object name (DNS-1123 subdomain)'),
  uid: z.string().min(1),
  generation: z.number().int().nonnegative(),
});
export type ResourceRef = z.infer<typeof resourceRefSchema>;

/** The `cluster` label: a DNS-1123 label of at most 59 characters (`kud-<cluster>` is a Job name). */
const clusterName = z
  .string()
  .max(59)
  .regex(dns1123Label, 'a cluster name (DNS-1123 label, at most 59 characters)');

export const hostsResolvedDataSchema = z.object({
  provisioning: resourceRefSchema,
  cluster: clusterName,
  clusterType: clusterTypeSchema,
  nodes: z.array(resolvedNodeSchema).min(1),
});

export const inventoryRenderedDataSchema = z.object({
  provisioning: resourceRefSchema,
  cluster: clusterName,
  clusterType: clusterTypeSchema,
  /** Name of the `<cluster>-inventory` ConfigMap (key `hosts.ini`). */
  configMap: z.string().min(1),
  /** sha256 hex of the hosts.ini text; the Job carries it as an annotation. */
  inventorySha256: z.string().regex(/^[0-9a-f]{64}$/),
});

export const kudJobLaunchedDataSchema = z.object({
  provisioning: resourceRefSchema,
  cluster: clusterName,
  jobName: z.string().min(1),
  inventorySha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** created: a new Job; replaced: a finished Job with another inventory was replaced. */
  outcome: z.enum(['created', 'replaced']),
});

export const clusterReadyDataSchema = z.object({
  provisioning: resourceRefSchema,
  cluster: clusterName,
  /** Name of the `<cluster>-configmap` ConfigMap with MASTER_/WORKER_ keys. */
  configMap: z.string().min(1),
  nodes: z.array(resolvedNodeSchema).min(1),
});

export const hostResultSchema = z.object({
  node: z.string(),
  ip: z.string(),
  roles: z.array(z.enum(['master', 'worker'])),
  packages: z.array(z.string()),
  exitCode: z.number().int().nullable(),
  /** Last lines of stderr, or the connection error. Never secrets. */
  error: z.string().optional(),
  startedAt: z.string(),
  durationMs: z.number().nonnegative(),
});
export type HostResult = z.infer<typeof hostResultSchema>;

export const softwareInstalledDataSchema = z.object({
  software: resourceRefSchema,
  cluster: clusterName,
  hosts: z.array(hostResultSchema),
});

export const provisioningFailedDataSchema = z.object({
  provisioning: resourceRefSchema,
  cluster: z.string(),
  /** The condition type that failed: HostsResolved, InventoryRendered, JobLaunched, KudInstalled. */
  step: z.string().min(1),
  reason: z.string().min(1),
  message: z.string().min(1),
});

export const softwareFailedDataSchema = z.object({
  software: resourceRefSchema,
  cluster: z.string(),
  reason: z.string().min(1),
  message: z.string().min(1),
  hosts: z.array(hostResultSchema).optional(),
});

const imageTypeName = z.enum(['binary', 'container', 'os']);

/** An upload finished: the bytes are in the store. The Image's status says where (never this event). */
export const imageUploadedDataSchema = z.object({
  image: resourceRefSchema,
  cluster: clusterName,
  type: imageTypeName,
  length: z.number().int().nonnegative(),
});

export const imageVerifiedDataSchema = z.object({
  image: resourceRefSchema,
  cluster: clusterName,
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  sha512: z.string().regex(/^[0-9a-f]{128}$/),
  /** The stable download URL (status.url). */
  url: z.string().min(1),
});

export const imageFailedDataSchema = z.object({
  image: resourceRefSchema,
  cluster: clusterName,
  reason: z.string().min(1),
  message: z.string().min(1),
});

/** Data schema per chain event type. */
export const chainEventDataSchemas = {
  [EventTypes.hostsResolved]: hostsResolvedDataSchema,
  [EventTypes.inventoryRendered]: inventoryRenderedDataSchema,
  [EventTypes.kudJobLaunched]: kudJobLaunchedDataSchema,
  [EventTypes.clusterReady]: clusterReadyDataSchema,
  [EventTypes.softwareInstalled]: softwareInstalledDataSchema,
  [EventTypes.provisioningFailed]: provisioningFailedDataSchema,
  [EventTypes.softwareFailed]: softwareFailedDataSchema,
  [EventTypes.imageUploaded]: imageUploadedDataSchema,
  [EventTypes.imageVerified]: imageVerifiedDataSchema,
  [EventTypes.imageFailed]: imageFailedDataSchema,
} as const;

export type HostsResolvedData = z.infer<typeof hostsResolvedDataSchema>;
export type InventoryRenderedData = z.infer<typeof inventoryRenderedDataSchema>;
export type KudJobLaunchedData = z.infer<typeof kudJobLaunchedDataSchema>;
export type ClusterReadyData = z.infer<typeof clusterReadyDataSchema>;
export type SoftwareInstalledData = z.infer<typeof softwareInstalledDataSchema>;
export type ProvisioningFailedData = z.infer<typeof provisioningFailedDataSchema>;
export type SoftwareFailedData = z.infer<typeof softwareFailedDataSchema>;
export type ImageUploadedData = z.infer<typeof imageUploadedDataSchema>;
export type ImageVerifiedData = z.infer<typeof imageVerifiedDataSchema>;
export type ImageFailedData = z.infer<typeof imageFailedDataSchema>;

/** Data of an ApiServerSource event in Resource mode: the whole object. */
export const kubeObjectSchema = z
  .object({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: z
      .object({
        name: z.string(),
        namespace: z.string().optional(),
        uid: z.string().optional(),
        generation: z.number().int().optional(),
        resourceVersion: z.string().optional(),
        labels: z.record(z.string(), z.string()).optional(),
      })
      .loose(),
  })
  .loose();
export type KubeObjectData = z.infer<typeof kubeObjectSchema>;

/** Data of a PingSource event: free-form; the sweep ignores it. */
export const pingDataSchema = z.unknown();

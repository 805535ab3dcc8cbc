import { z } from 'zod';
import {
  conditionSchema,
  dns1123LabelPattern,
  dns1123SubdomainPattern,
  kubeObjectSchema,
  objectMetaSchema,
} from './kube.js';
import { resolvedNodeSchema } from './node.js';

export const provisioningApiVersion = 'bpa.akraino.org/v1alpha1';
export const provisioningKind = 'Provisioning';

/** Label values selecting a VM path: Virtlet pods, or KubeVirt VMIs; anything else is bare metal. */
export const virtletClusterType = 'virtlet-vm';
export const kubevirtClusterType = 'kubevirt-vm';

/** Cluster names are DNS-1123 labels of at most 59 characters, so that `kud-<cluster>` is a valid name. */
export const clusterNameSchema = z
  .string()
  .max(59, 'must be at most 59 characters (kud-<cluster> must be a valid Job name)')
  .regex(dns1123LabelPattern, 'must be a DNS-1123 label (lower-case letters, digits and "-")');

/**
 * Node labels become inventory host names and ConfigMap keys (`MASTER_<label>`), so they are
 * limited to characters that are safe in both.
 */
export const nodeLabelPattern = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

/**
 * `cpu` (cores) and `memory` (a Kubernetes quantity): read as given and checked by planNodes
 * (shared/core/node-plan.ts), so the error names the node; the preflight holds the host's
 * inspected hardware to them (contract section 14).
 */
const numberOrString = z.union([z.number(), z.string()]).optional();

/** `mac-address` is read as text; its format is checked during resolution so the error names the node. */
const macAddressField = z.string().nullish();

export const masterNodeSchema = z
  .object({ 'mac-address': macAddressField, cpu: numberOrString, memory: numberOrString })
  .loose();
export type MasterNode = z.infer<typeof masterNodeSchema>;

export const workerNodeSchema = z
  .object({
    'mac-address': macAddressField,
    cpu: numberOrString,
    memory: numberOrString,
    sriov: z.boolean().optional(),
    qat: z.boolean().optional(),
  })
  .loose();
export type WorkerNode = z.infer<typeof workerNodeSchema>;

/** A list item `{<node-label>: {...}}`: exactly one key, a valid label. */
function oneKeyNodeMap<T extends z.ZodType>(value: T) {
  return z.record(z.string(), value.nullable()).superRefine((entry, ctx) => {
    const labels = Object.keys(entry);
    if (labels.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a map with exactly one node label (found ${labels.length === 0 ? 'none' : labels.join(', ')})`,
      });
      return;
    }
    const [label] = labels as [string];
    if (!nodeLabelPattern.test(label))
      ctx.addIssue({
        code: 'custom',
        message: `node label ${JSON.stringify(label)} is not valid: use letters, digits, "-", "_" or "." (at most 63 characters, starting and ending with a letter or digit)`,
      });
  });
}

export const masterEntrySchema = oneKeyNodeMap(masterNodeSchema);
export const workerEntrySchema = oneKeyNodeMap(workerNodeSchema);
export type MasterEntry = z.infer<typeof masterEntrySchema>;
export type WorkerEntry = z.infer<typeof workerEntrySchema>;

/** Installer plugin names end up in a shell command line: plain words only. */
export const kudPluginSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be a plugin name (letters, digits, ".", "_" or "-")');

export const podSubnetSchema = z
  .string()
  .refine(
    (value) => z.cidrv4().safeParse(value).success || z.cidrv6().safeParse(value).success,
    'must be a CIDR such as 10.244.64.0/18',
  );

/** `spec.image`: the name of an Image (bpa.akraino.org) in the Provisioning's namespace. */
export const provisioningImageSchema = z.object({
  name: z
    .string()
    .max(253, 'must be at most 253 characters')
    .regex(dns1123SubdomainPattern, 'must be the name of an Image (a DNS-1123 subdomain)'),
});

export const provisioningSpecSchema = z
  .object({
    masters: z.array(masterEntrySchema).nullish(),
    workers: z.array(workerEntrySchema).nullish(),
    KUDPlugins: z.array(kudPluginSchema).nullish(),
    PodSubnet: podSubnetSchema.nullish(),
    /** This Provisioning's KUD Job deadline, instead of KUD_ACTIVE_DEADLINE_SECONDS. */
    installTimeoutSeconds: z.number().int().positive().nullish(),
    /** An Image in this namespace: its hosts get it as BareMetalHost spec.image (docs/images.md). */
    image: provisioningImageSchema.nullish(),
  })
  .loose();
export type ProvisioningSpec = z.infer<typeof provisioningSpecSchema>;

/**
 * An object the functions created for a Provisioning, by uid (contract section 12, ADR 0013): only
 * an object whose uid is recorded here counts as the functions' own; labels and owner references
 * can be forged by anyone who may create that kind.
 */
export const ownedObjectSchema = z.object({
  kind: z.string().min(1),
  namespace: z.string().min(1),
  name: z.string().min(1),
  uid: z.string().min(1),
});
export type OwnedObject = z.infer<typeof ownedObjectSchema>;

/** Bound on the failed pod's last log lines kept in status.job.logTail (bytes of UTF-8). */
export const jobLogTailMaxBytes = 2048;

/**
 * status.job: the KUD Job's pod as the functions read it in their own namespace, where tenants
 * cannot read pods (contract sections 10 and 12): its name, phase, why it waits, the time left,
 * the node it ran on, and a failed pod's last log lines.
 */
export const jobStatusSchema = z
  .object({
    name: z.string(),
    namespace: z.string().optional(),
    pod: z.string().optional(),
    phase: z.string().optional(),
    waitingReason: z.string().optional(),
    waitingMessage: z.string().optional(),
    deadline: z.string().optional(),
    secondsLeft: z.number().optional(),
    nodeName: z.string().optional(),
    logTail: z.string().optional(),
  })
  .loose();
export type JobStatus = z.infer<typeof jobStatusSchema>;

/** Bound on a node's failure message in status.nodes[] (Ansible's `msg`, characters). */
export const nodeMessageMaxChars = 512;

/**
 * A node's progress in the KUD installer's run, read from its Ansible output (contract section
 * 14, shared/core/ansible-progress.ts): its phase, the play and task it is at, and for a failure
 * whether a task failed or the host was unreachable, with Ansible's own message.
 */
export const nodeProgressSchema = z.object({
  phase: z.enum(['Pending', 'Running', 'Succeeded', 'Failed']),
  play: z.string().optional(),
  task: z.string().optional(),
  failure: z.enum(['TaskFailed', 'HostUnreachable']).optional(),
  message: z.string().max(nodeMessageMaxChars).optional(),
});
export type NodeProgress = z.infer<typeof nodeProgressSchema>;

/** status.nodes[]: a resolved node, and once the KUD Job's output names it, its progress. */
export const statusNodeSchema = resolvedNodeSchema.extend(nodeProgressSchema.partial().shape);
export type StatusNode = z.infer<typeof statusNodeSchema>;

export const provisioningStatusSchema = z
  .object({
    conditions: z.array(conditionSchema).optional(),
    nodes: z.array(statusNodeSchema).optional(),
    jobName: z.string().optional(),
    job: jobStatusSchema.optional(),
    ownedObjects: z.array(ownedObjectSchema).optional(),
  })
  .loose();
export type ProvisioningStatus = z.infer<typeof provisioningStatusSchema>;

export const provisioningSchema = kubeObjectSchema(provisioningApiVersion, provisioningKind, {
  metadata: objectMetaSchema.extend({
    labels: z
      .object({ cluster: clusterNameSchema, 'cluster-type': z.string().optional() })
      .catchall(z.string()),
  }),
  spec: provisioningSpecSchema,
  status: provisioningStatusSchema.optional(),
});
export type Provisioning = z.infer<typeof provisioningSchema>;

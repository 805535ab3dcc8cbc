import { z } from 'zod';

// The shapes of the rendered objects the manifest tests check. Strict where a test relies on
// a field, loose elsewhere: these describe our manifests, not the whole Kubernetes API.

const stringMap = z.record(z.string(), z.string());
const name = z.string().min(1);

const reference = z.object({ apiVersion: name, kind: name, name, namespace: z.string().optional() });
export const destinationSchema = z.object({ ref: reference.optional(), uri: z.string().optional() });

const envVarSchema = z.object({
  name,
  value: z.string().optional(),
  valueFrom: z.object({ configMapKeyRef: z.object({ name, key: name }) }).optional(),
});

const httpProbeSchema = z.looseObject({ httpGet: z.looseObject({ path: z.string().startsWith('/') }) });

const containerSchema = z.looseObject({
  name,
  image: name,
  env: z.array(envVarSchema).optional(),
  readinessProbe: httpProbeSchema.optional(),
  livenessProbe: httpProbeSchema.optional(),
  resources: z.object({
    requests: z.object({ cpu: name, memory: name }),
    limits: z.object({ cpu: name, memory: name }),
  }),
  securityContext: z.looseObject({
    runAsNonRoot: z.boolean().optional(),
    readOnlyRootFilesystem: z.boolean().optional(),
    allowPrivilegeEscalation: z.boolean().optional(),
    capabilities: z.object({ drop: z.array(z.string()).optional(), add: z.array(z.string()).optional() }),
    seccompProfile: z.object({ type: z.string() }).optional(),
  }),
  volumeMounts: z.array(z.object({ name, mountPath: name, readOnly: z.boolean().optional() })).optional(),
});

export const knativeServiceSchema = z.looseObject({
  apiVersion: z.literal('serving.knative.dev/v1'),
  kind: z.literal('Service'),
  metadata: z.looseObject({ name, namespace: z.string().optional(), labels: stringMap.optional() }),
  spec: z.object({
    template: z.object({
      metadata: z.object({ labels: stringMap, annotations: stringMap }),
      spec: z.object({
        serviceAccountName: z.string().optional(),
        containerConcurrency: z.number().int().nonnegative(),
        timeoutSeconds: z.number().int().positive(),
        responseStartTimeoutSeconds: z.number().int().positive().optional(),
        containers: z.array(containerSchema).length(1),
        volumes: z
          .array(z.object({ name, secret: z.object({ secretName: name, optional: z.boolean().optional() }) }))
          .optional(),
      }),
    }),
  }),
});
export type KnativeService = z.infer<typeof knativeServiceSchema>;

export const deliverySchema = z.object({
  retry: z.number().int().positive(),
  backoffPolicy: z.enum(['linear', 'exponential']),
  backoffDelay: z.string().regex(/^PT\d+(\.\d+)?S$/),
  timeout: z.string().regex(/^PT\d+(\.\d+)?S$/),
  deadLetterSink: destinationSchema,
});

export const triggerSchema = z.looseObject({
  apiVersion: z.literal('eventing.knative.dev/v1'),
  kind: z.literal('Trigger'),
  metadata: z.looseObject({ name, annotations: stringMap.optional() }),
  spec: z.object({
    broker: name,
    // `filter.attributes` only: every broker class honours it (RabbitMQ ignores `filters`, and
    // `func deploy` writes attributes too), so the new dialect must not appear.
    filter: z.strictObject({ attributes: stringMap.refine((m) => Object.keys(m).length > 0) }),
    filters: z.never().optional(),
    subscriber: destinationSchema,
    delivery: deliverySchema,
  }),
});
export type Trigger = z.infer<typeof triggerSchema>;

export const brokerSchema = z.looseObject({
  apiVersion: z.literal('eventing.knative.dev/v1'),
  kind: z.literal('Broker'),
  metadata: z.looseObject({ name, annotations: stringMap }),
  spec: z.object({ config: reference.optional(), delivery: deliverySchema }),
});

export const apiServerSourceSchema = z.looseObject({
  apiVersion: z.literal('sources.knative.dev/v1'),
  kind: z.literal('ApiServerSource'),
  metadata: z.looseObject({ name }),
  spec: z.object({
    mode: z.enum(['Reference', 'Resource']),
    serviceAccountName: name,
    namespaceSelector: z.looseObject({}).optional(),
    resources: z
      .array(
        z.object({
          apiVersion: name,
          kind: name,
          selector: z.object({ matchLabels: stringMap }).optional(),
        }),
      )
      .min(1),
    sink: destinationSchema,
  }),
});

export const pingSourceSchema = z.looseObject({
  apiVersion: z.literal('sources.knative.dev/v1'),
  kind: z.literal('PingSource'),
  metadata: z.looseObject({ name }),
  spec: z.looseObject({ schedule: name, sink: destinationSchema }),
});

export const policyRuleSchema = z.object({
  apiGroups: z.array(z.string()),
  resources: z.array(z.string()),
  verbs: z.array(z.string()).min(1),
  resourceNames: z.array(z.string()).optional(),
});
export type PolicyRule = z.infer<typeof policyRuleSchema>;

export const clusterRoleSchema = z.looseObject({
  kind: z.literal('ClusterRole'),
  metadata: z.looseObject({ name }),
  rules: z.array(policyRuleSchema).min(1),
});

export const clusterRoleBindingSchema = z.looseObject({
  kind: z.literal('ClusterRoleBinding'),
  metadata: z.looseObject({ name }),
  roleRef: z.object({ apiGroup: z.literal('rbac.authorization.k8s.io'), kind: z.literal('ClusterRole'), name }),
  subjects: z.array(z.object({ kind: z.literal('ServiceAccount'), name, namespace: name })).length(1),
});

export const roleSchema = z.looseObject({
  kind: z.literal('Role'),
  metadata: z.looseObject({ name, namespace: name }),
  rules: z.array(policyRuleSchema).min(1),
});

export const roleBindingSchema = z.looseObject({
  kind: z.literal('RoleBinding'),
  metadata: z.looseObject({ name, namespace: name }),
  roleRef: z.object({ apiGroup: z.literal('rbac.authorization.k8s.io'), kind: z.literal('Role'), name }),
  subjects: z.array(z.object({ kind: z.literal('ServiceAccount'), name, namespace: name })).length(1),
});

/** func.yaml, the fields knative/func's schema (specVersion 0.36.0) defines that we use. */
export const funcYamlSchema = z.strictObject({
  specVersion: z.literal('0.36.0'),
  name,
  runtime: z.literal('typescript'),
  registry: name,
  image: name,
  created: z.union([z.string(), z.date()]),
  invoke: z.literal('cloudevent'),
  build: z.strictObject({ builder: z.enum(['pack', 's2i']) }),
  run: z.strictObject({
    envs: z.array(z.strictObject({ name, value: z.string() })),
    volumes: z.array(z.strictObject({ secret: name, path: name })).optional(),
  }),
  deploy: z.strictObject({
    namespace: name,
    serviceAccountName: name,
    labels: z.array(z.strictObject({ key: name, value: z.string() })),
    options: z.strictObject({
      scale: z.strictObject({ min: z.number().int(), max: z.number().int() }),
      resources: z.strictObject({
        requests: z.strictObject({ cpu: name, memory: name }),
        limits: z.strictObject({ cpu: name, memory: name, concurrency: z.number().int() }),
      }),
    }),
    healthEndpoints: z.strictObject({ liveness: name, readiness: name }),
    subscriptions: z.array(z.strictObject({ source: name, filters: stringMap })).min(1),
  }),
});
export type FuncYaml = z.infer<typeof funcYamlSchema>;

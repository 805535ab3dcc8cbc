import type { KubernetesObject } from '@kubernetes/client-node';
import { z } from 'zod';
import { BpaError } from '../../shared/errors.js';

/**
 * The local Serving overlay (docs/knative.md): Knative Serving cannot run on the one-machine
 * cluster (its networking layer needs Envoy), so each `serving.knative.dev/v1` Service of the
 * rendered manifests becomes what Serving itself would run for its first revision, minus the
 * activator and queue-proxy: an `apps/v1` Deployment and a `v1` Service at the ksvc's address
 * (`http://<name>.<ns>.svc.cluster.local`, port 80). References to a ksvc (Trigger subscribers,
 * dead-letter sinks, source sinks, SinkBinding subjects) are rewritten to them; every other object
 * passes unchanged. The overlay is computed from the ksvc manifests on every apply and never
 * committed, so the two cannot drift.
 *
 * What Serving does and this mirrors (knative.dev/serving pkg/reconciler/revision/resources):
 * pod labels `serving.knative.dev/{service,configuration,revision}`, env `PORT`, `K_REVISION`,
 * `K_CONFIGURATION`, `K_SERVICE` appended, probes without a port aimed at the user port, a TCP
 * readiness probe when the serving container has none (the webhook's default), the pod's
 * `terminationGracePeriodSeconds` = `timeoutSeconds` (default 300). What it cannot mirror is in
 * `notes`.
 */

const SERVING_GROUP = 'serving.knative.dev';
const SERVICE_LABEL = 'serving.knative.dev/service';
const CONFIGURATION_LABEL = 'serving.knative.dev/configuration';
const REVISION_LABEL = 'serving.knative.dev/revision';
const VISIBILITY_LABEL = 'networking.knative.dev/visibility';
/** Knative Serving's defaults (pkg/apis/serving/v1: DefaultUserPort, config-defaults revision-timeout-seconds). */
const DEFAULT_USER_PORT = 8080;
const DEFAULT_TIMEOUT_SECONDS = 300;
/** Env vars Serving injects and its webhook refuses in a ksvc (pkg/apis/serving/k8s_validation.go). */
const RESERVED_ENV = ['PORT', 'K_SERVICE', 'K_CONFIGURATION', 'K_REVISION'] as const;
/** RevisionSpec fields that only the queue-proxy and activator act on. */
const SERVING_ONLY_FIELDS = {
  containerConcurrency: 'requests per pod are not limited',
  timeoutSeconds: 'requests are not cut off',
  responseStartTimeoutSeconds: 'a slow first byte is not cut off',
  idleTimeoutSeconds: 'idle requests are not cut off',
} as const;

const stringMap = z.record(z.string(), z.string());
const name = z.string().min(1);

const portSchema = z.looseObject({
  name: z.string().optional(),
  containerPort: z.number().int().min(1).max(65535),
  protocol: z.string().optional(),
});
const probeSchema = z.looseObject({
  httpGet: z.looseObject({ port: z.union([z.number(), z.string()]).optional() }).optional(),
  tcpSocket: z.looseObject({ port: z.union([z.number(), z.string()]).optional() }).optional(),
  exec: z.looseObject({}).optional(),
  grpc: z.looseObject({}).optional(),
  periodSeconds: z.number().int().min(0).optional(),
});
const containerSchema = z.looseObject({
  name: z.string().optional(),
  image: name,
  ports: z.array(portSchema).max(1, 'Knative allows at most one port per container').optional(),
  env: z.array(z.looseObject({ name })).optional(),
  readinessProbe: probeSchema.optional(),
  livenessProbe: probeSchema.optional(),
  startupProbe: probeSchema.optional(),
});
type Container = z.infer<typeof containerSchema>;
type Probe = z.infer<typeof probeSchema>;

const trafficTargetSchema = z.looseObject({
  latestRevision: z.boolean().optional(),
  percent: z.number().optional(),
  revisionName: z.string().optional(),
  configurationName: z.string().optional(),
  tag: z.string().optional(),
});

/** The part of a `serving.knative.dev/v1` Service the overlay reads; the rest of the pod spec passes through. */
export const knativeServiceSchema = z.looseObject({
  apiVersion: z.literal(`${SERVING_GROUP}/v1`),
  kind: z.literal('Service'),
  metadata: z.looseObject({
    name,
    namespace: z.string().optional(),
    labels: stringMap.optional(),
    annotations: stringMap.optional(),
  }),
  spec: z.looseObject({
    template: z.looseObject({
      metadata: z
        .looseObject({
          name: z.string().optional(),
          labels: stringMap.optional(),
          annotations: stringMap.optional(),
        })
        .optional(),
      spec: z.looseObject({
        containers: z.array(containerSchema).min(1, 'a ksvc needs a container'),
        containerConcurrency: z.number().int().nonnegative().optional(),
        timeoutSeconds: z.number().int().positive().optional(),
        responseStartTimeoutSeconds: z.number().int().positive().optional(),
        idleTimeoutSeconds: z.number().int().positive().optional(),
      }),
    }),
    traffic: z.array(trafficTargetSchema).optional(),
  }),
});
export type KnativeService = z.infer<typeof knativeServiceSchema>;

export interface ServingOverlay {
  /** The objects to apply on a cluster without Knative Serving, in the input's order. */
  objects: KubernetesObject[];
  /** One line per Serving-only setting that has no effect here, `<ksvc>: <setting> ...`. */
  notes: string[];
}

const unconvertible = (service: string, message: string, details?: Record<string, unknown>) =>
  new BpaError('UnconvertibleKnativeService', `Knative Service ${service}: ${message}`, 'invalid', details);

const isServing = (object: KubernetesObject) => object.apiVersion?.startsWith(`${SERVING_GROUP}/`) === true;
const key = (namespace: string | undefined, name: string) => `${namespace ?? ''}/${name}`;

/** Converts the rendered manifests (`kubectl kustomize manifests/`) for a cluster without Knative Serving. */
export function servingOverlay(objects: readonly KubernetesObject[]): ServingOverlay {
  const notes: string[] = [];
  const converted = new Map<string, { deployment: KubernetesObject; service: KubernetesObject }>();
  for (const object of objects) {
    if (!isServing(object)) continue;
    const label = `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? '?'}`;
    if (object.kind !== 'Service') {
      throw new BpaError(
        'UnsupportedServingObject',
        `${object.kind} ${label} (${object.apiVersion}): only Knative Services can be converted for a cluster without Knative Serving`,
        'invalid',
      );
    }
    const parsed = knativeServiceSchema.safeParse(object);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw unconvertible(label, `${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
    }
    const ksvc = parsed.data;
    converted.set(key(ksvc.metadata.namespace, ksvc.metadata.name), convert(ksvc, notes));
  }

  const out: KubernetesObject[] = [];
  for (const object of objects) {
    if (isServing(object)) {
      const pair = converted.get(key(object.metadata?.namespace, object.metadata?.name ?? ''));
      if (pair) out.push(pair.deployment, pair.service);
      continue;
    }
    out.push(rewriteReferences(object, converted));
  }
  return { objects: out, notes };
}

/** The container that serves requests: the only one, or the one with a port (Knative's rule). */
function servingContainerIndex(ksvc: KnativeService): number {
  const { containers } = ksvc.spec.template.spec;
  if (containers.length === 1) return 0;
  const withPorts = containers.flatMap((c, i) => (c.ports && c.ports.length > 0 ? [i] : []));
  if (withPorts.length !== 1) {
    throw unconvertible(
      ksvc.metadata.name,
      `with ${containers.length} containers exactly one must name a port (found ${withPorts.length})`,
    );
  }
  return withPorts[0]!;
}

/**
 * Serving probes a readiness probe without `periodSeconds` from its queue-proxy every few
 * milliseconds until the container is ready (pkg/queue/readiness); a kubelet probes at most once
 * a second, so that is what a Deployment gets, not the kubelet's default of 10 s. A period that
 * is set stays: Serving leaves it to the kubelet too.
 */
function withServingReadinessPeriod(probe: Probe): Probe {
  return probe.periodSeconds === undefined || probe.periodSeconds === 0
    ? { ...probe, periodSeconds: 1 }
    : probe;
}

function withPort(probe: Probe | undefined, port: number): Probe | undefined {
  if (!probe) return probe;
  const next: Probe = { ...probe };
  if (probe.httpGet && probe.httpGet.port === undefined) next.httpGet = { ...probe.httpGet, port };
  if (probe.tcpSocket && probe.tcpSocket.port === undefined) next.tcpSocket = { ...probe.tcpSocket, port };
  return next;
}

function convert(ksvc: KnativeService, notes: string[]) {
  const serviceName = ksvc.metadata.name;
  const { namespace } = ksvc.metadata;
  const template = ksvc.spec.template;
  const revision = template.metadata?.name ?? `${serviceName}-00001`;

  for (const target of ksvc.spec.traffic ?? []) {
    const latestAll =
      target.latestRevision !== false && target.revisionName === undefined && target.percent === 100;
    if (!latestAll || target.tag !== undefined || (ksvc.spec.traffic?.length ?? 0) > 1) {
      throw unconvertible(
        serviceName,
        'spec.traffic splits or tags revisions; a cluster without Knative Serving runs one revision only',
      );
    }
  }

  const {
    containers,
    containerConcurrency,
    timeoutSeconds,
    responseStartTimeoutSeconds,
    idleTimeoutSeconds,
    ...podSpec
  } = template.spec;
  const dropped = { containerConcurrency, timeoutSeconds, responseStartTimeoutSeconds, idleTimeoutSeconds };
  for (const [field, why] of Object.entries(SERVING_ONLY_FIELDS)) {
    const value = dropped[field as keyof typeof dropped];
    if (value === undefined) continue;
    const extra =
      field === 'timeoutSeconds'
        ? `; the pod's terminationGracePeriodSeconds is ${value}, as on Knative`
        : '';
    notes.push(`${serviceName}: ${field} ${value} not enforced (no Knative Serving: ${why}${extra})`);
  }
  const podAnnotations = template.metadata?.annotations ?? {};
  for (const [annotation, value] of Object.entries(podAnnotations)) {
    if (annotation.startsWith('autoscaling.knative.dev/')) {
      notes.push(
        `${serviceName}: ${annotation} ${value} not enforced (no Knative autoscaler: one replica, never scaled to zero)`,
      );
    }
  }
  if (ksvc.metadata.labels?.[VISIBILITY_LABEL] !== 'cluster-local') {
    notes.push(
      `${serviceName}: public route not made (no Knative ingress: reachable inside the cluster only)`,
    );
  }

  const servingIndex = servingContainerIndex(ksvc);
  const servingPort = containers[servingIndex]!.ports?.[0];
  const userPort = servingPort?.containerPort ?? DEFAULT_USER_PORT;
  const knativeEnv = [
    { name: 'K_REVISION', value: revision },
    { name: 'K_CONFIGURATION', value: serviceName },
    { name: 'K_SERVICE', value: serviceName },
  ];
  const podContainers = containers.map((container, index): Container => {
    const reserved = (container.env ?? []).find((v) => (RESERVED_ENV as readonly string[]).includes(v.name));
    if (reserved) {
      throw unconvertible(
        serviceName,
        `container ${container.name ?? index} sets ${reserved.name}, which Knative reserves (it injects ${RESERVED_ENV.join(', ')})`,
      );
    }
    if (index !== servingIndex) return { ...container, env: [...(container.env ?? []), ...knativeEnv] };
    const readinessProbe = container.readinessProbe ?? { tcpSocket: {} };
    const probes = {
      readinessProbe: withServingReadinessPeriod(withPort(readinessProbe, userPort)!),
      ...(container.livenessProbe ? { livenessProbe: withPort(container.livenessProbe, userPort) } : {}),
      ...(container.startupProbe ? { startupProbe: withPort(container.startupProbe, userPort) } : {}),
    };
    return {
      ...container,
      env: [...(container.env ?? []), { name: 'PORT', value: String(userPort) }, ...knativeEnv],
      ...probes,
    };
  });

  const selector = { [SERVICE_LABEL]: serviceName };
  const podLabels = {
    ...(template.metadata?.labels ?? {}),
    [SERVICE_LABEL]: serviceName,
    [CONFIGURATION_LABEL]: serviceName,
    [REVISION_LABEL]: revision,
  };
  const metadata = {
    name: serviceName,
    ...(namespace !== undefined ? { namespace } : {}),
    labels: { ...(ksvc.metadata.labels ?? {}), [SERVICE_LABEL]: serviceName },
    ...(ksvc.metadata.annotations ? { annotations: ksvc.metadata.annotations } : {}),
  };

  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: {
      replicas: 1,
      selector: { matchLabels: selector },
      template: {
        metadata: {
          labels: podLabels,
          ...(template.metadata?.annotations ? { annotations: podAnnotations } : {}),
        },
        spec: {
          ...podSpec,
          terminationGracePeriodSeconds: timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
          containers: podContainers,
        },
      },
    },
  } as KubernetesObject;

  // Knative's port names: h2c means HTTP/2 without TLS, which a Service says with appProtocol.
  const h2c = servingPort?.name === 'h2c';
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: {
      type: 'ClusterIP',
      selector,
      ports: [
        {
          name: h2c ? 'http2' : 'http',
          ...(h2c ? { appProtocol: 'kubernetes.io/h2c' } : {}),
          port: 80,
          targetPort: userPort,
        },
      ],
    },
  } as KubernetesObject;
  return { deployment, service };
}

type Converted = ReadonlyMap<string, unknown>;

/**
 * A copy of `object` whose references to a converted ksvc name the Service (destinations: any
 * `ref` below `spec`) or the Deployment (a SinkBinding's `spec.subject`). A reference to a ksvc
 * the manifests do not hold cannot resolve without Serving: an error, not a silent miss.
 */
function rewriteReferences(object: KubernetesObject, converted: Converted): KubernetesObject {
  const spec = (object as { spec?: unknown }).spec;
  if (spec === undefined) return object;
  const namespace = object.metadata?.namespace;
  const where = `${object.kind} ${namespace ?? ''}/${object.metadata?.name ?? '?'}`;
  const target = (ref: Record<string, unknown>, path: string) => {
    const refName = typeof ref.name === 'string' ? ref.name : undefined;
    const refNamespace = typeof ref.namespace === 'string' ? ref.namespace : namespace;
    if (refName !== undefined && !converted.has(key(refNamespace, refName))) {
      throw new BpaError(
        'UnresolvableKnativeService',
        `${where} ${path} names Knative Service ${refNamespace ?? ''}/${refName}, which the manifests do not hold; without Knative Serving nothing would serve it`,
        'invalid',
      );
    }
  };
  const isKsvcRef = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'Service' &&
    typeof (value as { apiVersion?: unknown }).apiVersion === 'string' &&
    (value as { apiVersion: string }).apiVersion.startsWith(`${SERVING_GROUP}/`);

  const walk = (value: unknown, path: string): unknown => {
    if (Array.isArray(value)) return value.map((item, i) => walk(item, `${path}[${i}]`));
    if (typeof value !== 'object' || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [field, inner] of Object.entries(value)) {
      const innerPath = `${path}.${field}`;
      if (field === 'ref' && isKsvcRef(inner)) {
        target(inner, innerPath);
        out[field] = { ...inner, apiVersion: 'v1', kind: 'Service' };
      } else if (
        innerPath === 'spec.subject' &&
        object.kind === 'SinkBinding' &&
        object.apiVersion?.startsWith('sources.knative.dev/') &&
        isKsvcRef(inner)
      ) {
        target(inner, innerPath);
        out[field] = { ...inner, apiVersion: 'apps/v1', kind: 'Deployment' };
      } else {
        out[field] = walk(inner, innerPath);
      }
    }
    return out;
  };
  return { ...object, spec: walk(spec, 'spec') } as KubernetesObject;
}

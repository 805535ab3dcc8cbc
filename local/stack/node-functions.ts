import {
  CoreV1Api,
  Watch,
  type KubeConfig,
  type KubernetesObject,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { applyObjects } from '../control-plane/apply.js';
import { waitFor } from '../control-plane/wait.js';
import { renderManifests } from '../knative/stack.js';
import { servingOverlay } from '../knative/serving-overlay.js';

/** What the functions run with on a cluster without Knative: everything else of manifests/ is Knative's. */
const functionKinds = new Set([
  'Namespace',
  'ConfigMap',
  'ServiceAccount',
  'Role',
  'RoleBinding',
  'ClusterRole',
  'ClusterRoleBinding',
  'Deployment',
  'Service',
]);

export interface NodeFunction {
  name: string;
  namespace: string;
  /** The manifests' Deployment, as applied. */
  deployment: V1Deployment;
  /** The first pod: bound to the node -> Ready, in ms, from a watch (absent if not Ready in time). */
  scheduledToReadyMs?: number;
  pod?: V1Pod;
}

/** Only images the node holds: localhost/ names, i.e. those the images Component mapped. */
const fromLocalImages = (d: V1Deployment) =>
  (d.spec?.template.spec?.containers ?? []).every((c) => c.image?.startsWith('localhost/'));

/**
 * The functions of `manifestsDir` as pods of the real node, from their images: rendered as
 * `kubectl apply -k` does with the `images-local` Component (every image by digest), then the
 * local Serving overlay (docs/knative.md: each Knative Service a Deployment and a ClusterIP
 * Service, securityContext, probes and limits unchanged); applied with bpa-config, the
 * ServiceAccounts and RBAC. Knative's own kinds are left out (no Knative here), and so is a
 * Deployment naming an image the node does not hold (`dead-letter`: Knative's event_display).
 * Resolves once every Deployment's first pod is Ready, or after `timeoutMs` with what was seen.
 */
export async function applyNodeFunctions(
  kubeConfig: KubeConfig,
  manifestsDir: string,
  timeoutMs = 180_000,
): Promise<NodeFunction[]> {
  const objects = servingOverlay(renderManifests(manifestsDir, {}, ['images-local'])).objects.filter(
    (o: KubernetesObject) => functionKinds.has(o.kind ?? '') && !o.apiVersion?.includes('knative.dev'),
  );
  const deployments = objects.filter(
    (o): o is V1Deployment => o.kind === 'Deployment' && fromLocalImages(o as V1Deployment),
  );
  // A Service stays only beside its Deployment (dead-letter's goes with it).
  const hasDeployment = (service: KubernetesObject) =>
    deployments.some(
      (d) =>
        d.metadata?.name === service.metadata?.name && d.metadata?.namespace === service.metadata?.namespace,
    );
  const others = objects.filter((o) => o.kind !== 'Deployment' && (o.kind !== 'Service' || hasDeployment(o)));
  // RBAC lands in the namespaces bpa-config names (BMH_NAMESPACE, VM_NAMESPACES): they must exist.
  const declared = new Set(objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata?.name));
  const namespaces = [
    ...new Set(objects.map((o) => o.metadata?.namespace).filter((ns): ns is string => !!ns)),
  ];
  await applyObjects(kubeConfig, [
    ...objects.filter((o) => o.kind === 'Namespace'),
    ...namespaces
      .filter((ns) => !declared.has(ns))
      .map((ns) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })),
    ...others.filter((o) => o.kind !== 'Namespace'),
  ]);
  // A pod's token volume needs its namespace's kube-root-ca.crt (the root CA publisher's).
  const core = kubeConfig.makeApiClient(CoreV1Api);
  for (const namespace of namespaces)
    await waitFor(
      async () =>
        (await core.readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace }).catch(() => undefined))
          ? true
          : undefined,
      { what: `kube-root-ca.crt in ${namespace}`, timeoutMs: 30_000 },
    );
  const functions: (NodeFunction & { scheduledAt?: number; readyAt?: number })[] = deployments.map((d) => ({
    name: d.metadata?.name ?? '',
    namespace: d.metadata?.namespace ?? 'default',
    deployment: d,
  }));
  // One watch per function (Serving's label), started before the Deployments exist.
  const watches = await Promise.all(
    functions.map((f) =>
      new Watch(kubeConfig).watch(
        `/api/v1/namespaces/${f.namespace}/pods`,
        { labelSelector: `serving.knative.dev/service=${f.name}` },
        (_type, pod: V1Pod) => {
          const now = Date.now();
          if (f.pod && f.pod.metadata?.uid !== pod.metadata?.uid) return;
          f.pod = pod;
          if (f.scheduledAt === undefined && pod.spec?.nodeName) f.scheduledAt = now;
          const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
          if (f.readyAt === undefined && ready) f.readyAt = now;
        },
        () => undefined,
      ),
    ),
  );
  try {
    await applyObjects(kubeConfig, deployments);
    await waitFor(async () => (functions.every((f) => f.readyAt !== undefined) ? true : undefined), {
      what: 'the functions Ready',
      timeoutMs,
      intervalMs: 100,
    }).catch(() => undefined);
  } finally {
    for (const watch of watches) watch.abort();
  }
  return functions.map(({ scheduledAt, readyAt, ...f }) => ({
    ...f,
    ...(scheduledAt !== undefined && readyAt !== undefined
      ? { scheduledToReadyMs: readyAt - scheduledAt }
      : {}),
  }));
}

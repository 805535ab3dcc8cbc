/**
 * The chain on REAL Knative Eventing (install.ts): the manifests' Broker, Triggers and sources are
 * Knative's, and the functions run as pods from manifests/. Knative Services run as a Deployment
 * and a Service each through the local Serving overlay (an IMITATION of ours: Serving's controller
 * cannot run here, docs/knative.md). Everything runs from images on the one-machine cluster's node.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { AppsV1Api, CoreV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import { BpaError, describeError } from '../../shared/errors.js';
import { applyObjects, isStatus, parseYamlObjects } from '../control-plane/apply.js';
import { onboardNamespace } from '../control-plane/tenant.js';
import { repoRoot } from '../control-plane/repo-root.js';
import { waitFor } from '../control-plane/wait.js';
import { proveBrokerDelivery } from './delivery-probe.js';
import type { KnativeInstall } from './install.js';
import { releasedImageName, resolveKoImages } from './ko-images.js';
import { brokerIngressAddress, installKnativeOnRealNode, type ImageImporter } from './real-node.js';
import { servingOverlay } from './serving-overlay.js';

/** The Knative kinds whose Ready condition says the chain is wired (what `kubectl get` shows READY of). */
const readyKinds = new Set([
  'Broker',
  'Trigger',
  'ApiServerSource',
  'PingSource',
  'SinkBinding',
  'EventPolicy',
]);

export interface KnativeStackOptions {
  kubeConfig: KubeConfig;
  /** The kustomize directory applied. Default `<repo>/manifests`. */
  manifestsDir?: string;
  log?: (line: string) => void;
  /** For each wait (Knative ready, functions ready, objects Ready). Default 5 minutes. */
  timeoutMs?: number;
  /** bpa-config keys to set (an overlay; the demo's lab: LEASES_SOURCE, BMH_NAMESPACE, SSH_*). */
  config?: Record<string, string>;
  /**
   * Objects applied with the manifests and waited for like them (bpa dev's live-view Trigger);
   * without a namespace, in the manifests' Broker's.
   */
  extraObjects?: KubernetesObject[];
  /**
   * Tenant namespaces onboarded with the install (manifests/tenant), default `default`, as the
   * embedded stack does; others are onboarded by whoever makes them (onboardNamespace).
   */
  tenantNamespaces?: readonly string[];
  /**
   * Keys set in Eventing's config-features as it is installed (`authentication-oidc: enabled`);
   * needs a control plane whose service-account keys pods reach (serviceAccountJwksInCluster).
   */
  features?: Record<string, string>;
  /** Keys set in Eventing's config-observability as it is installed (`metrics-protocol: prometheus`). */
  observability?: Record<string, string>;
  /** Kustomize components of the manifests applied with them, by name (`event-authorization`). */
  components?: readonly string[];
  /**
   * Kustomize patches in the overlay, as an operator's own overlay adds them (a volume that
   * carries a file a function reads), applied after `config`'s.
   */
  patches?: readonly KustomizePatch[];
  /**
   * The real node (local/kubelet-node) the cluster runs on: Knative's images are imported into it
   * and its config/ resolved to them (installKnativeOnRealNode), the manifests get the
   * `images-local` Component (the functions' images by digest, written by the cluster's image
   * build) and the dead-letter sink Knative's event_display image.
   */
  node: ImageImporter;
}

export interface KnativeStack {
  install: KnativeInstall;
  /** What was applied: the rendered manifests through the local Serving overlay. */
  objects: KubernetesObject[];
  /** What the local Serving overlay could not keep (docs/knative.md). */
  notes: string[];
  /** `<kind> <namespace>/<name>` of every Knative object, all Ready. */
  ready: string[];
  /**
   * The MT broker's ingress as this machine reaches it, for `bpa send`: its ClusterIP on the
   * imitation; on the real node its pod's address (ClusterIPs are kube-proxy's, inside the node).
   */
  ingressBase: string;
  readyAfterMs: number;
}

/** A kustomize `patches:` entry: a patch (JSON 6902 or strategic merge, as YAML) and its target. */
export interface KustomizePatch {
  target: { group?: string; kind: string; name: string };
  patch: string;
}

const baseKustomizationSchema = z.looseObject({
  replacements: z
    .array(
      z.looseObject({ source: z.looseObject({ kind: z.string().optional(), name: z.string().optional() }) }),
    )
    .optional(),
});

/**
 * An overlay of `dir` that sets bpa-config keys (docs/deploy.md's way): a patch of the ConfigMap,
 * and the base's replacements fed by bpa-config again (a base's replacements run before an
 * overlay's patches, so BMH_NAMESPACE would not move host-lookup's Role otherwise).
 */
function configOverlay(
  dir: string,
  config: Record<string, string>,
  components: readonly string[],
  patches: readonly KustomizePatch[],
): string {
  const overlay = mkdtempSync(join(tmpdir(), 'bpa-knative-overlay-'));
  const base = baseKustomizationSchema.parse(parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')));
  const fedByConfig = (base.replacements ?? []).filter(
    (r) =>
      (r.source.kind === 'ConfigMap' && r.source.name === 'bpa-config') || r.source.kind === 'ServiceAccount',
  );
  const ops = Object.entries(config).map(([key, value]) => ({ op: 'add', path: `/data/${key}`, value }));
  const configPatches =
    ops.length > 0 ? [{ target: { kind: 'ConfigMap', name: 'bpa-config' }, patch: stringify(ops) }] : [];
  writeFileSync(
    join(overlay, 'kustomization.yaml'),
    stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: [relative(overlay, dir)],
      ...(components.length > 0
        ? { components: components.map((name) => relative(overlay, join(dir, 'components', name))) }
        : {}),
      ...(configPatches.length + patches.length > 0 ? { patches: [...configPatches, ...patches] } : {}),
      replacements: fedByConfig,
    }),
  );
  return overlay;
}

/**
 * `kubectl kustomize <dir>`: the same objects `kubectl apply -k` sends (images, replacements),
 * with `config` set in bpa-config, `components` of `dir`/components and `patches` added through an
 * overlay.
 */
export function renderManifests(
  dir: string,
  config: Record<string, string> = {},
  components: readonly string[] = [],
  patches: readonly KustomizePatch[] = [],
): KubernetesObject[] {
  let text: string;
  const overlay =
    Object.keys(config).length > 0 || components.length > 0 || patches.length > 0
      ? configOverlay(dir, config, components, patches)
      : undefined;
  try {
    text = execFileSync('kubectl', ['kustomize', overlay ?? dir], {
      encoding: 'utf8',
      maxBuffer: 32 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    throw new BpaError(
      'ManifestsNotRendered',
      `kubectl kustomize ${dir} failed (the Knative engine renders manifests/ as kubectl apply -k does; is kubectl installed?): ${describeError(error).message}`,
      'invalid',
    );
  } finally {
    if (overlay) rmSync(overlay, { recursive: true, force: true });
  }
  return parseYamlObjects(text, `kubectl kustomize ${dir}`);
}

const refOf = (o: KubernetesObject) => ({
  apiVersion: o.apiVersion ?? '',
  kind: o.kind ?? '',
  namespace: o.metadata?.namespace ?? 'default',
  name: o.metadata?.name ?? '',
});

/** The namespaces bpa-config names for hosts (BMH_NAMESPACE, VM_NAMESPACES): they must exist. */
function hostNamespaces(objects: KubernetesObject[]): string[] {
  const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata?.name === 'bpa-config') as
    (KubernetesObject & { data?: Record<string, string> }) | undefined;
  const names = [config?.data?.BMH_NAMESPACE ?? '', ...(config?.data?.VM_NAMESPACES ?? '').split(',')];
  return [...new Set(names.map((n) => n.trim()).filter(Boolean))];
}

/**
 * The chain on real Knative Eventing: installs Eventing (engines/build.sh knative, its own
 * config/), renders manifests/ with kubectl kustomize, turns the Knative Services into
 * Deployments and Services (the local Serving overlay: Serving cannot run here), applies it all
 * unchanged otherwise and waits until the functions run and every Broker, Trigger, source and
 * SinkBinding is Ready. Needs the one-machine cluster's node (the functions and Knative run as
 * its pods) and `npm run build` (the functions' bundles).
 */
export async function startKnativeStack(options: KnativeStackOptions): Promise<KnativeStack> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  const timeoutMs = options.timeoutMs ?? 300_000;
  const installOptions = {
    kubeConfig: options.kubeConfig,
    log,
    timeoutMs,
    ...(options.features ? { features: options.features } : {}),
    ...(options.observability ? { observability: options.observability } : {}),
  };
  const install = await installKnativeOnRealNode({ ...installOptions, node: options.node });
  const eventDisplay = 'ko://knative.dev/eventing/cmd/event_display';
  const images: Record<string, string> = install.images[eventDisplay]
    ? { [releasedImageName(eventDisplay)]: install.images[eventDisplay] }
    : {};
  const manifestsDir = options.manifestsDir ?? join(repoRoot(), 'manifests');
  const components = [...(options.components ?? []), 'images-local'];
  const manifests = renderManifests(manifestsDir, options.config, components, options.patches);
  const rendered = servingOverlay(resolveKoImages(manifests, images).objects);
  // As on the embedded engine (local/stack/index.ts): an extra object without a namespace goes where the
  // manifests' Broker is, not to `default` (where no Broker would serve a Trigger).
  const installNamespace = rendered.objects.find((o) => o.kind === 'Broker')?.metadata?.namespace;
  const extraObjects = (options.extraObjects ?? []).map((o) => ({
    ...o,
    metadata: { ...(installNamespace ? { namespace: installNamespace } : {}), ...o.metadata },
  }));
  const overlay = { ...rendered, objects: [...rendered.objects, ...extraObjects] };
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  for (const name of hostNamespaces(overlay.objects)) {
    await core.createNamespace({ body: { metadata: { name } } }).catch((error: unknown) => {
      if (!isStatus(error, 409)) throw error;
    });
  }
  log(
    `knative: applying ${manifestsDir} (${overlay.objects.length} objects, Knative Services as Deployments)`,
  );
  await applyObjects(options.kubeConfig, overlay.objects);
  // The functions write in a tenant's namespace only where it is onboarded (docs/adr/0013-tenancy.md).
  for (const namespace of options.tenantNamespaces ?? ['default'])
    await onboardNamespace(options.kubeConfig, namespace, {
      manifestsDir,
      ...(installNamespace ? { functionsNamespace: installNamespace } : {}),
    });

  const apps = options.kubeConfig.makeApiClient(AppsV1Api);
  const deployments = overlay.objects.filter((o) => o.kind === 'Deployment').map(refOf);
  log(`knative: waiting for ${deployments.map((d) => d.name).join(', ')}`);
  await Promise.all(
    deployments.map((d) =>
      waitFor(
        async () => {
          const current = await apps.readNamespacedDeployment({ name: d.name, namespace: d.namespace });
          return (current.status?.readyReplicas ?? 0) >= (current.spec?.replicas ?? 1) ? true : undefined;
        },
        { what: `deployment ${d.namespace}/${d.name} to be ready`, timeoutMs, intervalMs: 500 },
      ),
    ),
  );
  const knative = overlay.objects.filter((o) => readyKinds.has(o.kind ?? '')).map(refOf);
  const ready = await Promise.all(
    knative.map((ref) =>
      waitForReady(options.kubeConfig, ref, timeoutMs).then(() => `${ref.kind} ${ref.namespace}/${ref.name}`),
    ),
  );
  const ingressBase = await brokerIngressAddress(options.kubeConfig);
  // Ready is the control plane's word; a probe shows the data plane carries the Triggers too
  // (delivery-probe.ts). Under event authorization the Broker admits only the senders its
  // EventPolicy names, and this process is none of them: there the probe cannot be sent.
  const broker = overlay.objects.find((o) => o.kind === 'Broker');
  const deadLetter = overlay.objects.find(
    (o) => o.kind === 'Deployment' && o.metadata?.name === 'dead-letter',
  );
  if (
    broker?.metadata?.name &&
    installNamespace &&
    deadLetter &&
    !components.includes('event-authorization')
  ) {
    const probeMs = await proveBrokerDelivery({
      kubeConfig: options.kubeConfig,
      namespace: installNamespace,
      broker: broker.metadata.name,
      ingressBase,
      sink: {
        service: 'dead-letter',
        podSelector: 'serving.knative.dev/service=dead-letter',
        container: 'event-display',
      },
      timeoutMs,
    });
    log(
      `knative: a probe event went through the Broker to the dead-letter sink (${(probeMs / 1000).toFixed(1)} s)`,
    );
  }
  const readyAfterMs = Date.now() - started;
  log(`knative: the chain is ready after ${(readyAfterMs / 1000).toFixed(1)} s`);
  return {
    install,
    objects: overlay.objects,
    notes: overlay.notes,
    ready: ready.sort(),
    ingressBase,
    readyAfterMs,
  };
}

/** Waits for a Knative object's Ready condition to be True; times out with its last reason. */
async function waitForReady(
  kubeConfig: KubeConfig,
  ref: ReturnType<typeof refOf>,
  timeoutMs: number,
): Promise<void> {
  const client = KubernetesObjectApi.makeApiClient(kubeConfig);
  await waitFor(
    async () => {
      const object = (await client.read({
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        metadata: { name: ref.name, namespace: ref.namespace },
      })) as KubernetesObject & {
        status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
      };
      const condition = object.status?.conditions?.find((c) => c.type === 'Ready');
      if (condition?.status === 'True') return true;
      throw new Error(
        `Ready ${condition?.status ?? 'absent'} ${condition?.reason ?? ''} ${condition?.message ?? ''}`.trim(),
      );
    },
    { what: `${ref.kind} ${ref.namespace}/${ref.name} to be Ready`, timeoutMs, intervalMs: 1000 },
  );
}

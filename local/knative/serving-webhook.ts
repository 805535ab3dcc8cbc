/**
 * Installs REAL Knative Serving's admission webhook (knative.dev/serving, engines/build.sh
 * knative-serving) from its own config/, so Knative Services are validated and defaulted by
 * Serving's own code. Only the webhook: Serving's controller, activator and autoscaler do not run
 * here (docs/knative.md), so a Knative Service becomes a Deployment through the local Serving
 * overlay (serving-overlay.ts), which is ours.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { z } from 'zod';
import { installCrds } from '../control-plane/crds.js';
import { knativeVersions } from './binaries.js';
import { knativeConfigObjects } from './eventing-config.js';
import { createMissing, waitForAdmission, waitForWorkloads } from './install-steps.js';
import { resolveKoImages } from './ko-images.js';

/** Knative Serving's own namespace (config/core/100-namespace.yaml). */
export const servingNamespace = 'knative-serving';

/**
 * What of knative.dev/serving's config/ its admission webhook needs, read unchanged: the
 * namespace, Serving's CRDs, the ConfigMaps the webhook watches (config-defaults,
 * config-features, ... through its config store), its ServiceAccount (`controller`) and RBAC, its
 * Deployment and Service (deployments/webhook.yaml; not webhook-hpa.yaml: nothing scales here),
 * its Secret and the three webhook configurations. Not the activator, autoscaler or controller
 * (they need Serving's networking layer, Envoy, which no registry here serves: docs/knative.md).
 */
export const servingWebhookConfigPaths = [
  'config/core/100-namespace.yaml',
  'config/core/300-resources',
  'config/core/configmaps',
  'config/core/200-serviceaccount.yaml',
  'config/core/200-roles',
  'config/core/deployments/webhook.yaml',
  'config/core/webhooks',
] as const;

/**
 * The activator's own ServiceAccount, Role, ClusterRole and bindings, which share the files
 * above with the webhook's: no activator runs here, so neither do they.
 */
const isActivators = (object: KubernetesObject) =>
  object.metadata?.labels?.['app.kubernetes.io/component'] === 'activator' ||
  (object.metadata?.name ?? '').startsWith('knative-serving-activator');

/** Serving's webhook's objects from knative.dev/serving's config/, unchanged but for the activator's. */
export function servingWebhookObjects(version = knativeVersions().serving): KubernetesObject[] {
  return knativeConfigObjects('knative.dev/serving', version, servingWebhookConfigPaths).filter(
    (object) => !isActivators(object),
  );
}

export interface ServingWebhookInstallOptions {
  kubeConfig: KubeConfig;
  /** Progress lines. */
  log?: (line: string) => void;
  /** How long the webhook gets to become ready and admitting. Default 3 minutes. */
  timeoutMs?: number;
  /** `ko://` path -> image by digest, the node's (as installKnativeEventing's `images`). */
  images: Record<string, string>;
}

export interface ServingWebhookInstall {
  version: string;
  /** Objects of config/ created now (0 when it was installed already). */
  created: number;
  /** The workloads of knative-serving, all ready: `deployment/webhook`. */
  workloads: string[];
  readyAfterMs: number;
}

/** What the install's dry-run probe needs to see: Serving's defaulting has run on the ksvc. */
const defaultedKsvcSchema = z.looseObject({
  spec: z.looseObject({ traffic: z.array(z.looseObject({ latestRevision: z.literal(true) })).min(1) }),
});

/**
 * Installs Knative Serving's admission webhook from knative.dev/serving's own config/ (only what
 * it needs: servingWebhookConfigPaths) and waits until it admits Knative Services: the webhook
 * Deployment ready, a CA bundle in each webhook configuration, then a dry-run ksvc that comes
 * back defaulted by Serving's code (`spec.traffic`). From then on, every ksvc the API server
 * receives is defaulted and validated by Serving (timeoutSeconds, containerConcurrency, ...).
 * Runs on a node that holds its image (`images`: installServingWebhookOnRealNode). Installing it
 * into a cluster intercepts
 * every ksvc there, so the tests give it a cluster of its own.
 */
export async function installServingWebhook(
  options: ServingWebhookInstallOptions,
): Promise<ServingWebhookInstall> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 180_000;
  const version = knativeVersions().serving;
  const source = servingWebhookObjects(version);
  const objects = resolveKoImages(source, options.images).objects;
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
  const rest = objects.filter((o) => o.kind !== 'CustomResourceDefinition');
  log(
    `knative: installing Serving ${version}'s webhook from its config/ (${objects.length} objects, ${crds.length} CRDs)`,
  );
  // Replaced, as Eventing's: the cluster may hold other versions of Serving's CRDs (../shared).
  await installCrds(options.kubeConfig, crds, { timeoutMs });
  const created = await createMissing(options.kubeConfig, rest);
  const workloads = await waitForWorkloads(
    options.kubeConfig,
    rest.filter((o) => o.kind === 'Deployment'),
    timeoutMs,
  );
  // Through CustomObjectsApi: KubernetesObjectApi would serialise a `kind: Service` as core v1's
  // Service model (it picks models by version and kind alone) and drop its template.
  const custom = options.kubeConfig.makeApiClient(CustomObjectsApi);
  await waitForAdmission(
    options.kubeConfig,
    rest,
    async () =>
      defaultedKsvcSchema.parse(
        await custom.createNamespacedCustomObject({
          group: 'serving.knative.dev',
          version: 'v1',
          plural: 'services',
          namespace: servingNamespace,
          dryRun: 'All',
          body: {
            apiVersion: 'serving.knative.dev/v1',
            kind: 'Service',
            metadata: { name: 'install-check' },
            spec: { template: { spec: { containers: [{ image: 'bpa.local/install-check:1' }] } } },
          },
        }),
      ),
    { what: "Knative Serving's webhook to default and admit a Knative Service", timeoutMs },
  );
  const readyAfterMs = Date.now() - started;
  log(`knative: Serving ${version}'s webhook ready in ${(readyAfterMs / 1000).toFixed(1)} s`);
  return { version, created, workloads, readyAfterMs };
}

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { AdmissionregistrationV1Api, AppsV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import { BpaError, describeError } from '../../shared/errors.js';
import { isStatus } from '../control-plane/apply.js';
import { installCrds } from '../control-plane/crds.js';
import { waitFor } from '../control-plane/wait.js';
import { knativeVersions } from './binaries.js';
import { eventingConfigObjects } from './eventing-config.js';

/** Knative Eventing's own namespace (config/core/100-namespace.yaml). */
export const knativeNamespace = 'knative-eventing';

export interface KnativeInstallOptions {
  kubeConfig: KubeConfig;
  /** Progress lines. */
  log?: (line: string) => void;
  /** How long the components get to become ready. Default 5 minutes (a loaded 2-core machine). */
  timeoutMs?: number;
}

export interface KnativeInstall {
  version: string;
  /** Objects of config/ created now (0 when it was installed already). */
  created: number;
  /** The Deployments and StatefulSets of knative-eventing, all ready. */
  workloads: string[];
  readyAfterMs: number;
}

const quiet = () => undefined;

/**
 * Creates an object unless one of that name exists: an install, not an upgrade. Knative's webhook
 * fills in what its config/ leaves empty (certificates, webhook rules, CA bundles); replacing
 * those objects on a second install would undo that.
 */
async function createIfMissing(client: KubernetesObjectApi, object: KubernetesObject): Promise<boolean> {
  try {
    await client.create(object);
    return true;
  } catch (error) {
    if (isStatus(error, 409)) return false;
    throw new BpaError(
      'KnativeInstallFailed',
      `creating ${object.kind} ${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}: ${describeError(error).message}`,
      'internal',
    );
  }
}

/**
 * Installs Knative Eventing from its module's own config/ (core, in-memory channel, MT channel
 * broker), as `kubectl apply -f` of a release would, and waits until every component is ready
 * and its webhook admits objects. Runs on a cluster whose node runs Knative's images (the
 * one-machine cluster: local/node/images.yaml maps them to engines/build.sh knative's binaries).
 */
export async function installKnativeEventing(options: KnativeInstallOptions): Promise<KnativeInstall> {
  const log = options.log ?? quiet;
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 300_000;
  const version = knativeVersions().eventing;
  const objects = eventingConfigObjects(version);
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
  const rest = objects.filter((o) => o.kind !== 'CustomResourceDefinition');
  log(
    `knative: installing Eventing ${version} from its config/ (${objects.length} objects, ${crds.length} CRDs)`,
  );
  // CRDs first (replaced: the test cluster may hold other versions of them), served before use.
  await installCrds(options.kubeConfig, crds, { timeoutMs });
  const client = KubernetesObjectApi.makeApiClient(options.kubeConfig);
  let created = 0;
  for (const object of rest.filter((o) => o.kind === 'Namespace'))
    if (await createIfMissing(client, object)) created++;
  for (const object of rest.filter((o) => o.kind !== 'Namespace'))
    if (await createIfMissing(client, object)) created++;

  const apps = options.kubeConfig.makeApiClient(AppsV1Api);
  const workloads: string[] = [];
  const deployments = rest.filter((o) => o.kind === 'Deployment').map((o) => o.metadata?.name ?? '');
  const statefulSets = rest.filter((o) => o.kind === 'StatefulSet').map((o) => o.metadata?.name ?? '');
  log(`knative: waiting for ${[...deployments, ...statefulSets].join(', ')}`);
  await Promise.all([
    ...deployments.map((name) =>
      waitFor(
        async () => {
          const d = await apps.readNamespacedDeployment({ name, namespace: knativeNamespace });
          const want = d.spec?.replicas ?? 1;
          return (d.status?.readyReplicas ?? 0) >= want && (d.status?.updatedReplicas ?? 0) >= want
            ? workloads.push(`deployment/${name}`)
            : undefined;
        },
        { what: `Knative deployment ${knativeNamespace}/${name} to be ready`, timeoutMs, intervalMs: 500 },
      ),
    ),
    ...statefulSets.map((name) =>
      waitFor(
        async () => {
          const s = await apps.readNamespacedStatefulSet({ name, namespace: knativeNamespace });
          const want = s.spec?.replicas ?? 1;
          return (s.status?.readyReplicas ?? 0) >= want ? workloads.push(`statefulset/${name}`) : undefined;
        },
        { what: `Knative statefulset ${knativeNamespace}/${name} to be ready`, timeoutMs, intervalMs: 500 },
      ),
    ),
  ]);
  // Ready pods are not yet an admitting webhook: it fills in its rules and certificates first,
  // and until then the API server admits Knative objects unchecked. So: rules and CA bundle in
  // every webhook configuration of config/, then a dry-run Broker through them.
  const admission = options.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const webhookConfigs = rest.filter((o) => o.kind?.endsWith('WebhookConfiguration'));
  await waitFor(
    async () => {
      for (const config of webhookConfigs) {
        const name = config.metadata?.name ?? '';
        const current =
          config.kind === 'MutatingWebhookConfiguration'
            ? await admission.readMutatingWebhookConfiguration({ name })
            : await admission.readValidatingWebhookConfiguration({ name });
        const pending = (current.webhooks ?? []).find((w) => !w.clientConfig.caBundle);
        if (pending) throw new Error(`${name}: no CA bundle yet`);
      }
      await client.create(
        {
          apiVersion: 'eventing.knative.dev/v1',
          kind: 'Broker',
          metadata: { name: 'install-check', namespace: knativeNamespace },
          spec: {},
        } as KubernetesObject,
        undefined,
        'All',
      );
      return true;
    },
    { what: 'the Knative Eventing webhook to admit a Broker', timeoutMs, intervalMs: 500 },
  );
  const readyAfterMs = Date.now() - started;
  log(`knative: Eventing ${version} ready in ${(readyAfterMs / 1000).toFixed(1)} s`);
  return { version, created, workloads: workloads.sort(), readyAfterMs };
}

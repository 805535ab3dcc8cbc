import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { AdmissionregistrationV1Api, AppsV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import { BpaError, describeError } from '../../shared/errors.js';
import { isStatus } from '../control-plane/apply.js';
import { waitFor } from '../control-plane/wait.js';

/**
 * The steps every install of a Knative config/ here takes (Eventing: install.ts; Serving's
 * webhook: serving-webhook.ts): create what is missing, wait for the workloads, then for an
 * admitting webhook.
 */

/**
 * Creates an object unless one of that name exists: an install, not an upgrade. Knative's webhook
 * fills in what its config/ leaves empty (certificates, webhook rules, CA bundles); replacing
 * those objects on a second install would undo that.
 */
export async function createIfMissing(
  client: KubernetesObjectApi,
  object: KubernetesObject,
): Promise<boolean> {
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

/** Creates the objects that are missing, Namespaces first; resolves with how many it created. */
export async function createMissing(kubeConfig: KubeConfig, objects: KubernetesObject[]): Promise<number> {
  const client = KubernetesObjectApi.makeApiClient(kubeConfig);
  let created = 0;
  for (const object of objects.filter((o) => o.kind === 'Namespace'))
    if (await createIfMissing(client, object)) created++;
  for (const object of objects.filter((o) => o.kind !== 'Namespace'))
    if (await createIfMissing(client, object)) created++;
  return created;
}

/**
 * Waits until every Deployment and StatefulSet among `objects` has its replicas ready (and, for
 * Deployments, updated); resolves with `deployment/<name>` and `statefulset/<name>`, sorted.
 */
export async function waitForWorkloads(
  kubeConfig: KubeConfig,
  objects: KubernetesObject[],
  timeoutMs: number,
): Promise<string[]> {
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const of = (kind: string) =>
    objects
      .filter((o) => o.kind === kind)
      .map((o) => ({ name: o.metadata?.name ?? '', namespace: o.metadata?.namespace ?? 'default' }));
  const workloads: string[] = [];
  await Promise.all([
    ...of('Deployment').map(({ name, namespace }) =>
      waitFor(
        async () => {
          const d = await apps.readNamespacedDeployment({ name, namespace });
          const want = d.spec?.replicas ?? 1;
          return (d.status?.readyReplicas ?? 0) >= want && (d.status?.updatedReplicas ?? 0) >= want
            ? workloads.push(`deployment/${name}`)
            : undefined;
        },
        { what: `Knative deployment ${namespace}/${name} to be ready`, timeoutMs, intervalMs: 500 },
      ),
    ),
    ...of('StatefulSet').map(({ name, namespace }) =>
      waitFor(
        async () => {
          const s = await apps.readNamespacedStatefulSet({ name, namespace });
          const want = s.spec?.replicas ?? 1;
          return (s.status?.readyReplicas ?? 0) >= want ? workloads.push(`statefulset/${name}`) : undefined;
        },
        { what: `Knative statefulset ${namespace}/${name} to be ready`, timeoutMs, intervalMs: 500 },
      ),
    ),
  ]);
  return workloads.sort();
}

/**
 * Ready pods are not yet an admitting webhook: it fills in its rules and certificates first, and
 * until then the API server admits Knative objects unchecked. So: a CA bundle in every webhook of
 * every webhook configuration among `objects`, then `probe` (a dry-run create through them) until
 * it resolves with something other than undefined.
 */
export async function waitForAdmission(
  kubeConfig: KubeConfig,
  objects: KubernetesObject[],
  probe: () => Promise<unknown>,
  options: { what: string; timeoutMs: number },
): Promise<void> {
  const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const webhookConfigs = objects.filter((o) => o.kind?.endsWith('WebhookConfiguration'));
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
      return probe();
    },
    { what: options.what, timeoutMs: options.timeoutMs, intervalMs: 500 },
  );
}

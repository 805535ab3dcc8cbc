import { CoreV1Api, KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { BpaError } from '../../shared/errors.js';
import { applyObjects, isStatus } from '../control-plane/apply.js';
import { onboardNamespace } from '../control-plane/tenant.js';
import { renderManifests } from '../knative/stack.js';

/** The kinds of manifests/ that give the functions their rights. */
const rbacKinds = new Set([
  'Namespace',
  'ServiceAccount',
  'Role',
  'RoleBinding',
  'ClusterRole',
  'ClusterRoleBinding',
]);

/** Long enough for a `bpa dev` session or a test file; the API server may cap it lower. */
const tokenSeconds = 24 * 3600;

/**
 * The functions' own identities for the embedded engine: applies the ServiceAccounts and RBAC of
 * `manifestsDir` (rendered as `kubectl apply -k` does, with `config` set in bpa-config, so
 * BMH_NAMESPACE places host-lookup's Role as on a cluster) and returns, per ServiceAccount named,
 * a kubeconfig holding a token of it from the TokenRequest API (what the kubelet mounts into a
 * pod). A function then has exactly the rights manifests/ gives it, as on real Knative, instead
 * of the stack's own (admin) credentials.
 */
export async function serviceAccountKubeConfigs(options: {
  kubeConfig: KubeConfig;
  manifestsDir: string;
  config: Record<string, string>;
  serviceAccounts: readonly string[];
  /**
   * Tenant namespaces onboarded at once (manifests/tenant), default `default` (where `bpa dev`
   * users apply their resources); others are onboarded by whoever makes them (onboardNamespace).
   */
  tenantNamespaces?: readonly string[];
}): Promise<Map<string, KubeConfig>> {
  const rendered = renderManifests(options.manifestsDir, options.config);
  const rbac = rendered.filter((o: KubernetesObject) => rbacKinds.has(o.kind ?? ''));
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  // BMH_NAMESPACE and the like must exist before their Roles (as startKnativeStack makes them).
  for (const namespace of new Set(rbac.flatMap((o) => (o.metadata?.namespace ? [o.metadata.namespace] : []))))
    await core.createNamespace({ body: { metadata: { name: namespace } } }).catch((error: unknown) => {
      if (!isStatus(error, 409)) throw error;
    });
  await applyObjects(options.kubeConfig, rbac);
  // What the functions write in a tenant's namespace holds only where it is onboarded.
  const functionsNamespace = rbac.find((o) => o.kind === 'ServiceAccount')?.metadata?.namespace;
  for (const namespace of options.tenantNamespaces ?? ['default'])
    await onboardNamespace(options.kubeConfig, namespace, {
      manifestsDir: options.manifestsDir,
      ...(functionsNamespace ? { functionsNamespace } : {}),
    });
  const cluster = options.kubeConfig.getCurrentCluster();
  if (!cluster) throw new BpaError('NoCluster', 'the stack’s kubeconfig names no current cluster', 'invalid');
  const configs = new Map<string, KubeConfig>();
  for (const name of options.serviceAccounts) {
    const account = rbac.find((o) => o.kind === 'ServiceAccount' && o.metadata?.name === name);
    const namespace = account?.metadata?.namespace;
    if (!namespace)
      throw new BpaError(
        'NoServiceAccount',
        `${options.manifestsDir} has no ServiceAccount ${name}`,
        'invalid',
      );
    const user = `system:serviceaccount:${namespace}:${name}`;
    const request = await core.createNamespacedServiceAccountToken({
      name,
      namespace,
      body: { spec: { audiences: [], expirationSeconds: tokenSeconds } },
    });
    const token = request.status?.token;
    if (!token) throw new BpaError('NoToken', `no token issued for ServiceAccount ${name}`, 'internal');
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ ...cluster, name: 'cluster' }],
      users: [{ name: user, token }],
      contexts: [{ name, cluster: 'cluster', user }],
      currentContext: name,
    });
    configs.set(name, config);
  }
  return configs;
}

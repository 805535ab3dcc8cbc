/**
 * A tenant of the shared cluster (contract section 12): a ServiceAccount that may create
 * Provisioning, Software and Image resources, ConfigMaps, Secrets, Jobs and pods in its own
 * namespace, and nothing else. The hostile-tenant suites (test/resilience/hostile-tenant-*.test.ts)
 * act through it, so an attack can only use what a real tenant holds.
 */
import { KubeConfig, RbacAuthorizationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { asServiceAccount } from '../../support/service-account-kubeconfig.js';

/** The rules of a tenant's own Role: its namespace's resources, no RBAC, no cluster scope. */
export const tenantRules = [
  {
    apiGroups: ['bpa.akraino.org'],
    resources: ['provisionings', 'softwares', 'images'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  {
    apiGroups: [''],
    resources: ['configmaps', 'secrets', 'pods'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  { apiGroups: [''], resources: ['pods/log', 'events'], verbs: ['get', 'list', 'watch'] },
  {
    apiGroups: ['batch'],
    resources: ['jobs'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
];

export interface Tenant {
  namespace: string;
  serviceAccount: string;
  /** Authenticates as the tenant's ServiceAccount (a TokenRequest token). */
  kubeConfig: KubeConfig;
}

/**
 * Makes `namespace/<serviceAccount>` a tenant (ServiceAccount, Role, RoleBinding, as the admin)
 * and returns a KubeConfig that acts as it. The namespace must exist.
 */
export async function createTenant(
  admin: KubeConfig,
  namespace: string,
  serviceAccount = 'tenant',
): Promise<Tenant> {
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: serviceAccount } } });
  await rbac.createNamespacedRole({
    namespace,
    body: { metadata: { name: serviceAccount }, rules: tenantRules },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: serviceAccount },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: serviceAccount },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    },
  });
  const kubeConfig = await asServiceAccount(admin, namespace, serviceAccount, new KubeConfig());
  return { namespace, serviceAccount, kubeConfig };
}

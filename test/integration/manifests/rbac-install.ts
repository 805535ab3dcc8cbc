import { stringify } from 'yaml';
import { parseObjects } from '../../unit/manifests/kustomize.js';
import { onboardNamespace } from '../../../local/control-plane/tenant.js';
import { loadAdminKubeConfig } from './admin-kubeconfig.js';
import { grantsIn, rbacTable, tenantRoleName } from '../../unit/manifests/rbac-table.js';
import { kubectl, kustomizeInto } from './kubectl.js';

const rbacKinds = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];

/**
 * How many objects applyRbac applies: 3 per account, 1 more (the `:tenant` ClusterRole) for tenant
 * grants, 2 more (Role, RoleBinding) for install-namespace grants, for BMH_NAMESPACE grants, and
 * per VM namespace for VM_NAMESPACES grants.
 */
export const rbacObjectCount = (vmNamespaces: string[] = []) =>
  Object.values(rbacTable).reduce(
    (count, a) =>
      count +
      3 +
      ((a.tenantGrants ?? []).length > 0 ? 1 : 0) +
      ((a.installNamespaceGrants ?? []).length > 0 ? 2 : 0) +
      (grantsIn(a, 'BMH_NAMESPACE').length > 0 ? 2 : 0) +
      (grantsIn(a, 'VM_NAMESPACES').length > 0 ? 2 * vmNamespaces.length : 0),
    0,
  );

/**
 * Applies the rendered ServiceAccounts, ClusterRoles and ClusterRoleBindings (and the Roles of the
 * install namespace and of BMH_NAMESPACE, both `namespace` here, and of the VM namespaces the
 * docs' overlay adds, none as shipped) for real, rendered into `namespace` with `prefix` on every
 * name, so the cluster-scoped roles of one test file collide with nothing else in the run.
 * Returns how many objects were applied.
 */
export async function applyRbac(
  kubeconfigPath: string,
  namespace: string,
  prefix: string,
  vmNamespaces: string[] = [],
): Promise<number> {
  const objects = parseObjects(kustomizeInto(namespace, { namePrefix: prefix, vmNamespaces })).filter((o) =>
    rbacKinds.includes(o.kind),
  );
  const result = await kubectl(kubeconfigPath, ['apply', '-f', '-'], objects.map((o) => stringify(o)).join('---\n'));
  if (result.code !== 0) throw new Error(`kubectl apply of the RBAC objects failed: ${result.stderr}`);
  return objects.length;
}

/**
 * Onboards `tenant` for the install applyRbac made (manifests/tenant's RoleBindings, to the
 * prefixed ServiceAccounts of `namespace`), as local/control-plane/tenant.ts does for every engine.
 */
export async function onboardForRbac(kubeconfigPath: string, namespace: string, prefix: string, tenant: string) {
  await onboardNamespace(loadAdminKubeConfig(kubeconfigPath), tenant, { functionsNamespace: namespace, namePrefix: prefix });
}

/** Deletes the cluster-scoped objects applyRbac made (the ServiceAccounts go with their namespace). */
export async function deleteRbac(kubeconfigPath: string, prefix: string): Promise<void> {
  const names = Object.values(rbacTable).flatMap((a) => [
    `${prefix}${a.clusterRole}`,
    ...((a.tenantGrants ?? []).length > 0 ? [`${prefix}${tenantRoleName(a)}`] : []),
  ]);
  await kubectl(kubeconfigPath, ['delete', 'clusterrolebinding', ...names, '--ignore-not-found']);
  await kubectl(kubeconfigPath, ['delete', 'clusterrole', ...names, '--ignore-not-found']);
}

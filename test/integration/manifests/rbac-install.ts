import { stringify } from 'yaml';
import { parseObjects } from '../../unit/manifests/kustomize.js';
import { grantsIn, rbacTable } from '../../unit/manifests/rbac-table.js';
import { kubectl, kustomizeInto } from './kubectl.js';

const rbacKinds = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];

/**
 * How many objects applyRbac applies: 3 per account, 2 more (Role, RoleBinding) for
 * install-namespace grants, for BMH_NAMESPACE grants, and per VM namespace for VM_NAMESPACES grants.
 */
export const rbacObjectCount = (vmNamespaces: string[] = []) =>
  Object.values(rbacTable).reduce(
    (count, a) =>
      count +
      3 +
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

/** Deletes the cluster-scoped objects applyRbac made (the ServiceAccounts go with their namespace). */
export async function deleteRbac(kubeconfigPath: string, prefix: string): Promise<void> {
  const names = Object.values(rbacTable).map((a) => `${prefix}${a.clusterRole}`);
  await kubectl(kubeconfigPath, ['delete', 'clusterrolebinding', ...names, '--ignore-not-found']);
  await kubectl(kubeconfigPath, ['delete', 'clusterrole', ...names, '--ignore-not-found']);
}

import { z } from 'zod';
import { useTestCluster } from '../../support/cluster.js';
import {
  forbiddenSamplesFor,
  grantsAsRules,
  grantsIn,
  permissionKey,
  permissionsOf,
  rbacTable,
  type Permission,
} from '../../unit/manifests/rbac-table.js';
import { kubectl, mapLimited } from './kubectl.js';
import { applyRbac, deleteRbac, rbacObjectCount } from './rbac-install.js';

// The RBAC objects applied for real, then the API server asked, as each ServiceAccount, about
// every permission of the table (yes), a sample of others (no), and for its whole rule list
// (exactly the table). Rendered into this file's namespace with a name prefix so the
// cluster-scoped roles do not collide with anything else in the run; BMH_NAMESPACE is this
// namespace too (docs/deploy.md's overlay), VM_NAMESPACES empty as shipped.
const cluster = useTestCluster({ namespacePrefix: 'manifests-rbac' });
let prefix = '';
const userOf = (serviceAccount: string) => `system:serviceaccount:${cluster.namespace}:${prefix}${serviceAccount}`;

/**
 * `kubectl auth can-i` in every namespace at once (the functions work across all of them), or
 * in one namespace when given (the install namespace's Role).
 */
async function canI(serviceAccount: string, p: Permission, namespace?: string): Promise<boolean> {
  const [resource, subresource] = p.resource.split('/');
  const target = `${resource}${p.group ? `.${p.group}` : ''}${p.resourceName ? `/${p.resourceName}` : ''}`;
  const where = namespace ? ['-n', namespace] : ['--all-namespaces'];
  const args = ['auth', 'can-i', p.verb, target, ...where, `--as=${userOf(serviceAccount)}`];
  if (subresource) args.push(`--subresource=${subresource}`);
  const result = await kubectl(cluster.kubeconfigPath, args);
  const answer = result.stdout.trim();
  if (answer !== 'yes' && answer !== 'no') throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return answer === 'yes';
}

const rulesReviewSchema = z.object({
  status: z.object({
    resourceRules: z.array(
      z.object({
        verbs: z.array(z.string()),
        apiGroups: z.array(z.string()).default([]),
        resources: z.array(z.string()).default([]),
        resourceNames: z.array(z.string()).optional(),
      }),
    ),
  }),
});

/** Every resource rule the API server applies to `serviceAccount` (SelfSubjectRulesReview). */
async function rulesOf(serviceAccount: string, namespace: string) {
  const review = { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectRulesReview', spec: { namespace } };
  const result = await kubectl(
    cluster.kubeconfigPath,
    ['create', '--validate=false', '-f', '-', '-o', 'json', `--as=${userOf(serviceAccount)}`],
    JSON.stringify(review),
  );
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return rulesReviewSchema.parse(JSON.parse(result.stdout)).status.resourceRules;
}

beforeAll(async () => {
  prefix = `${cluster.namespace}-`;
  expect(await applyRbac(cluster.kubeconfigPath, cluster.namespace, prefix)).toBe(rbacObjectCount());
});

afterAll(async () => {
  if (prefix) await deleteRbac(cluster.kubeconfigPath, prefix);
});

describe.each(Object.entries(rbacTable))('%s', (_, account) => {
  const granted = permissionsOf(grantsAsRules(account.grants));

  it('may do every call of the RBAC table, in every namespace', async () => {
    const answers = await mapLimited(granted, 4, async (p) => [permissionKey(p), await canI(account.serviceAccount, p)]);
    expect(answers).toEqual(granted.map((p) => [permissionKey(p), true]));
  });

  it('may not do the forbidden samples, nor write specs or read other Secrets', async () => {
    const forbidden = forbiddenSamplesFor(account.serviceAccount);
    const answers = await mapLimited(forbidden, 4, async (p) => [permissionKey(p), await canI(account.serviceAccount, p)]);
    expect(answers).toEqual(forbidden.map((p) => [permissionKey(p), false]));
  });

  const inInstallNamespace = permissionsOf(grantsAsRules(account.installNamespaceGrants ?? []));
  const installOnly = inInstallNamespace.filter(
    (p) => !granted.some((g) => permissionKey(g) === permissionKey(p)),
  );

  it('may do the install-namespace calls there, and only there', async () => {
    const here = await mapLimited(inInstallNamespace, 4, async (p) => [
      permissionKey(p),
      await canI(account.serviceAccount, p, cluster.namespace),
    ]);
    expect(here).toEqual(inInstallNamespace.map((p) => [permissionKey(p), true]));
    const elsewhere = await mapLimited(installOnly, 4, async (p) => [
      permissionKey(p),
      await canI(account.serviceAccount, p, 'some-user-namespace'),
    ]);
    expect(elsewhere).toEqual(installOnly.map((p) => [permissionKey(p), false]));
  });

  it('has exactly the table’s rules and nothing more', async () => {
    const rules = await rulesOf(account.serviceAccount, 'some-user-namespace');
    // Every authenticated user may ask what it may do (system:basic-user): not ours to grant.
    const selfReviews = ['authorization.k8s.io', 'authentication.k8s.io'];
    const ours = rules.filter((r) => !r.apiGroups.every((g) => selfReviews.includes(g)));
    const keys = (list: Permission[]) => [...new Set(list.map(permissionKey))].sort();
    expect(keys(permissionsOf(ours))).toEqual(keys(granted));
    const installRules = (await rulesOf(account.serviceAccount, cluster.namespace)).filter(
      (r) => !r.apiGroups.every((g) => selfReviews.includes(g)),
    );
    // The install namespace is BMH_NAMESPACE here too.
    const inBmhNamespace = permissionsOf(grantsAsRules(grantsIn(account, 'BMH_NAMESPACE')));
    expect(keys(permissionsOf(installRules))).toEqual(keys([...granted, ...inInstallNamespace, ...inBmhNamespace]));
  });

  const bmhOnly = permissionsOf(grantsAsRules(grantsIn(account, 'BMH_NAMESPACE')));
  const vmOnly = permissionsOf(grantsAsRules(grantsIn(account, 'VM_NAMESPACES')));

  it('may do the BMH_NAMESPACE calls there, and in no other namespace', async () => {
    const here = await mapLimited(bmhOnly, 4, async (p) => [
      permissionKey(p),
      await canI(account.serviceAccount, p, cluster.namespace),
    ]);
    expect(here).toEqual(bmhOnly.map((p) => [permissionKey(p), true]));
    const elsewhere = await mapLimited(bmhOnly, 4, async (p) => [
      permissionKey(p),
      (await canI(account.serviceAccount, p, 'some-user-namespace')) || (await canI(account.serviceAccount, p)),
    ]);
    expect(elsewhere).toEqual(bmhOnly.map((p) => [permissionKey(p), false]));
  });

  it('may do none of the VM_NAMESPACES calls anywhere (shipped: no VM namespace)', async () => {
    const anywhere = await mapLimited(vmOnly, 4, async (p) => [
      permissionKey(p),
      (await canI(account.serviceAccount, p)) ||
        (await canI(account.serviceAccount, p, cluster.namespace)) ||
        (await canI(account.serviceAccount, p, 'some-user-namespace')),
    ]);
    expect(anywhere).toEqual(vmOnly.map((p) => [permissionKey(p), false]));
  });
});

it('the table has BareMetalHost and VM pod grants for host-lookup (the checks above are not empty)', () => {
  const keys = (setting: 'BMH_NAMESPACE' | 'VM_NAMESPACES') =>
    permissionsOf(grantsAsRules(grantsIn(rbacTable['host-lookup'], setting))).map(permissionKey).sort();
  expect(keys('BMH_NAMESPACE')).toEqual([
    'get metal3.io/baremetalhosts',
    'list metal3.io/baremetalhosts',
    'patch metal3.io/baremetalhosts',
    'watch metal3.io/baremetalhosts',
  ]);
  expect(keys('VM_NAMESPACES')).toEqual(['list core/pods']);
});

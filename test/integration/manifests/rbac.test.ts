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

/** What no account may do in kube-system or any namespace that was not onboarded (contract section 12). */
const neverOutsideOnboarded: Permission[] = [
  { group: '', resource: 'secrets', verb: 'get' },
  { group: '', resource: 'secrets', verb: 'get', resourceName: 'ssh-key-secret' },
  { group: '', resource: 'secrets', verb: 'list' },
  { group: '', resource: 'pods', verb: 'create' },
  { group: 'batch', resource: 'jobs', verb: 'create' },
  { group: 'rbac.authorization.k8s.io', resource: 'rolebindings', verb: 'create' },
  { group: 'rbac.authorization.k8s.io', resource: 'roles', verb: 'create' },
  { group: '', resource: 'serviceaccounts/token', verb: 'create' },
  { group: '', resource: 'serviceaccounts', verb: 'create' },
  { group: 'coordination.k8s.io', resource: 'leases', verb: 'update' },
  { group: 'coordination.k8s.io', resource: 'leases', verb: 'create' },
  { group: '', resource: 'configmaps', verb: 'update' },
  { group: '', resource: 'configmaps', verb: 'create' },
  { group: '', resource: 'events', verb: 'create' },
  { group: 'bpa.akraino.org', resource: 'provisionings/status', verb: 'update' },
];

/** What no account may do anywhere: grant what it does not hold, or act as another. */
const neverAnywhere: Permission[] = [
  { group: 'rbac.authorization.k8s.io', resource: 'roles', verb: 'escalate' },
  { group: 'rbac.authorization.k8s.io', resource: 'roles', verb: 'bind' },
  { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', verb: 'escalate' },
  { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', verb: 'bind' },
  { group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings', verb: 'create' },
  { group: '', resource: 'serviceaccounts', verb: 'impersonate' },
  { group: '', resource: 'users', verb: 'impersonate' },
  { group: '', resource: 'groups', verb: 'impersonate' },
  { group: '', resource: 'serviceaccounts/token', verb: 'create' },
  { group: '', resource: 'pods', verb: 'create' },
  { group: '', resource: 'pods/exec', verb: 'create' },
  { group: '', resource: 'nodes/proxy', verb: 'get' },
];
import { kubectl, mapLimited } from './kubectl.js';
import { applyRbac, deleteRbac, onboardForRbac, rbacObjectCount } from './rbac-install.js';

// The RBAC objects applied for real, then the API server asked (`kubectl auth can-i --as=<sa>`),
// as each ServiceAccount, about every permission of the table in the place the table says (yes)
// and elsewhere (no), a sample of others (no), what none may do in kube-system or a namespace
// that was not onboarded (no), and for its whole rule list (exactly the table). Rendered into
// this file's namespace with a name prefix so the cluster-scoped roles do not collide with
// anything else in the run; this namespace is the functions' namespace, BMH_NAMESPACE
// (docs/deploy.md's overlay) and an onboarded tenant's (manifests/tenant) at once; VM_NAMESPACES
// empty as shipped. `some-user-namespace` and kube-system were not onboarded.
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
  await onboardForRbac(cluster.kubeconfigPath, cluster.namespace, prefix, cluster.namespace);
});

afterAll(async () => {
  if (prefix) await deleteRbac(cluster.kubeconfigPath, prefix);
});

describe.each(Object.entries(rbacTable))('%s', (_, account) => {
  const granted = permissionsOf(grantsAsRules(account.grants));
  const inTenants = permissionsOf(grantsAsRules(account.tenantGrants ?? []));

  it('may do the cluster-wide calls of the RBAC table (reads only) in every namespace', async () => {
    const answers = await mapLimited(granted, 4, async (p) => [permissionKey(p), await canI(account.serviceAccount, p)]);
    expect(answers).toEqual(granted.map((p) => [permissionKey(p), true]));
    expect(granted.filter((p) => !['get', 'list', 'watch'].includes(p.verb))).toEqual([]);
  });

  it('may do the tenant calls in an onboarded namespace, and not in one that was not onboarded', async () => {
    const here = await mapLimited(inTenants, 4, async (p) => [
      permissionKey(p),
      await canI(account.serviceAccount, p, cluster.namespace),
    ]);
    expect(here).toEqual(inTenants.map((p) => [permissionKey(p), true]));
    const tenantOnly = inTenants.filter((p) => !granted.some((g) => permissionKey(g) === permissionKey(p)));
    for (const elsewhere of ['some-user-namespace', 'kube-system']) {
      const answers = await mapLimited(tenantOnly, 4, async (p) => [
        permissionKey(p),
        await canI(account.serviceAccount, p, elsewhere),
      ]);
      expect({ elsewhere, answers }).toEqual({ elsewhere, answers: tenantOnly.map((p) => [permissionKey(p), false]) });
    }
    // Nor cluster-wide (which `--all-namespaces` asks).
    const clusterWide = await mapLimited(tenantOnly, 4, async (p) => [permissionKey(p), await canI(account.serviceAccount, p)]);
    expect(clusterWide).toEqual(tenantOnly.map((p) => [permissionKey(p), false]));
  });

  it('may read no Secret, create no pod, Job, RoleBinding or token, update no Lease or ConfigMap in kube-system or a namespace not onboarded', async () => {
    for (const namespace of ['kube-system', 'some-user-namespace']) {
      const answers = await mapLimited(neverOutsideOnboarded, 4, async (p) => [
        permissionKey(p),
        await canI(account.serviceAccount, p, namespace),
      ]);
      expect({ namespace, answers }).toEqual({
        namespace,
        answers: neverOutsideOnboarded.map((p) => [permissionKey(p), false]),
      });
    }
  });

  it('may not escalate, bind, impersonate, create pods or tokens anywhere', async () => {
    const answers = await mapLimited(neverAnywhere, 4, async (p) => [
      permissionKey(p),
      (await canI(account.serviceAccount, p)) || (await canI(account.serviceAccount, p, cluster.namespace)),
    ]);
    expect(answers).toEqual(neverAnywhere.map((p) => [permissionKey(p), false]));
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
  // The test's namespace is also an onboarded tenant's: those checks are the tenant test's.

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
    // The install namespace is BMH_NAMESPACE and an onboarded tenant's here too.
    const inBmhNamespace = permissionsOf(grantsAsRules(grantsIn(account, 'BMH_NAMESPACE')));
    expect(keys(permissionsOf(installRules))).toEqual(
      keys([...granted, ...inInstallNamespace, ...inBmhNamespace, ...inTenants]),
    );
    // kube-system: the cluster-wide reads, nothing else.
    const systemRules = (await rulesOf(account.serviceAccount, 'kube-system')).filter(
      (r) => !r.apiGroups.every((g) => selfReviews.includes(g)),
    );
    expect(keys(permissionsOf(systemRules))).toEqual(keys(granted));
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

it('the table has BareMetalHost and VM (pod, VMI) grants for host-lookup (the checks above are not empty)', () => {
  const keys = (setting: 'BMH_NAMESPACE' | 'VM_NAMESPACES') =>
    permissionsOf(grantsAsRules(grantsIn(rbacTable['host-lookup'], setting))).map(permissionKey).sort();
  expect(keys('BMH_NAMESPACE')).toEqual([
    'get metal3.io/baremetalhosts',
    'list metal3.io/baremetalhosts',
    'patch metal3.io/baremetalhosts',
    'watch metal3.io/baremetalhosts',
  ]);
  // Virtlet VM pods and KubeVirt VirtualMachineInstances, each read, listed and claimed (patch).
  expect(keys('VM_NAMESPACES')).toEqual([
    'get core/pods',
    'get kubevirt.io/virtualmachineinstances',
    'list core/pods',
    'list kubevirt.io/virtualmachineinstances',
    'patch core/pods',
    'patch kubevirt.io/virtualmachineinstances',
  ]);
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { kustomizeDocOverlays, repoRoot } from './kustomize.js';
import { renderedManifests } from './manifest-set.js';
import {
  allGrantsOf,
  forbiddenSamplesFor,
  grantsIn,
  permissionKey,
  permissionsOf,
  rbacTable,
  grantsAsRules,
  settingRoleName,
  shippedNamespaces,
  type Account,
  type SettingNamespace,
} from './rbac-table.js';

const manifests = renderedManifests();
const keysOf = (rules: Parameters<typeof permissionsOf>[0]) => permissionsOf(rules).map(permissionKey).sort();

describe('RBAC', () => {
  it('has no wildcard anywhere in any rule', () => {
    for (const role of manifests.clusterRoles) {
      for (const rule of role.rules) {
        const values = [...rule.apiGroups, ...rule.resources, ...rule.verbs, ...(rule.resourceNames ?? [])];
        expect({ role: role.metadata.name, wildcards: values.filter((v) => v.includes('*')) }).toEqual({
          role: role.metadata.name,
          wildcards: [],
        });
      }
    }
  });

  /** `<namespace>/<name>` of every Role the table expects, for the given setting namespaces. */
  const expectedRoles = (install: string, namespaces: Record<SettingNamespace, string[]>) =>
    Object.values(rbacTable).flatMap((a) => [
      ...((a.installNamespaceGrants ?? []).length > 0 ? [`${install}/${a.clusterRole}`] : []),
      ...(['BMH_NAMESPACE', 'VM_NAMESPACES'] as const).flatMap((setting) =>
        grantsIn(a, setting).length > 0 ? namespaces[setting].map((ns) => `${ns}/${settingRoleName(a, setting)}`) : [],
      ),
    ]);
  /** The rules of the Role `name` in `namespace`, and the subjects of its one RoleBinding there. */
  const roleAndBinding = (rendered: ReturnType<typeof renderedManifests>, namespace: string, name: string) => ({
    rules: keysOf(rendered.roles.find((r) => r.metadata.namespace === namespace && r.metadata.name === name)?.rules ?? []),
    subjects: rendered.roleBindings
      .filter((b) => b.metadata.namespace === namespace && b.roleRef.name === name)
      .map((b) => b.subjects),
  });
  const expectedRoleAndBinding = (account: Account, grants: Parameters<typeof grantsAsRules>[0], install: string) => ({
    rules: keysOf(grantsAsRules(grants)),
    subjects: [[{ kind: 'ServiceAccount', name: account.serviceAccount, namespace: install }]],
  });

  it('has a Role (and RoleBinding) exactly for the install-namespace grants and the shipped BMH_NAMESPACE', () => {
    // The shipped setting values are those of bpa-config (the table's namespaces are not a guess).
    expect(shippedNamespaces).toEqual({
      BMH_NAMESPACE: [manifests.bpaConfig.BMH_NAMESPACE],
      VM_NAMESPACES: (manifests.bpaConfig.VM_NAMESPACES ?? '').split(',').filter(Boolean),
    });
    expect(shippedNamespaces).toEqual({ BMH_NAMESPACE: ['metal3'], VM_NAMESPACES: [] });
    expect(manifests.roles.map((r) => `${r.metadata.namespace}/${r.metadata.name}`).sort()).toEqual(
      expectedRoles('bpa-system', shippedNamespaces).sort(),
    );
    expect(manifests.roleBindings.map((r) => `${r.metadata.namespace}/${r.metadata.name}`).sort()).toEqual(
      expectedRoles('bpa-system', shippedNamespaces).sort(),
    );
    for (const account of Object.values(rbacTable)) {
      if ((account.installNamespaceGrants ?? []).length > 0)
        expect(roleAndBinding(manifests, 'bpa-system', account.clusterRole)).toEqual(
          expectedRoleAndBinding(account, account.installNamespaceGrants ?? [], 'bpa-system'),
        );
      if (grantsIn(account, 'BMH_NAMESPACE').length > 0)
        expect(roleAndBinding(manifests, 'metal3', settingRoleName(account, 'BMH_NAMESPACE'))).toEqual(
          expectedRoleAndBinding(account, grantsIn(account, 'BMH_NAMESPACE'), 'bpa-system'),
        );
    }
  });

  it('grants no pods to host-lookup in the shipped install (VM_NAMESPACES is empty)', () => {
    const pods = [...manifests.clusterRoles, ...manifests.roles].filter(
      (r) => r.metadata.name.startsWith('bpa-functions:host-lookup') && r.rules.some((rule) => rule.resources.includes('pods')),
    );
    expect(pods).toEqual([]);
  });

  it.each([
    ['docs’ “Another namespace” overlay', { namespace: 'edge-bpa' }, 'edge-bpa', { BMH_NAMESPACE: ['metal3'], VM_NAMESPACES: [] }],
    [
      'docs’ “Hosts and VM namespaces” overlay',
      { hosts: { bmhNamespace: 'hosts', vmNamespaces: ['edge-vms', 'lab-vms'] } },
      'bpa-system',
      { BMH_NAMESPACE: ['hosts'], VM_NAMESPACES: ['edge-vms', 'lab-vms'] },
    ],
    [
      'both overlays',
      { namespace: 'edge-bpa', hosts: { bmhNamespace: 'hosts', vmNamespaces: ['edge-vms'] } },
      'edge-bpa',
      { BMH_NAMESPACE: ['hosts'], VM_NAMESPACES: ['edge-vms'] },
    ],
  ] as const)('%s: each Role lands in its namespace, bound to the ServiceAccount of the install', (_, options, install, namespaces) => {
    const rendered = renderedManifests(kustomizeDocOverlays(options));
    expect(rendered.bpaConfig.BMH_NAMESPACE).toBe(namespaces.BMH_NAMESPACE[0]);
    expect(rendered.bpaConfig.VM_NAMESPACES).toBe(namespaces.VM_NAMESPACES.join(','));
    const expected = expectedRoles(install, { BMH_NAMESPACE: [...namespaces.BMH_NAMESPACE], VM_NAMESPACES: [...namespaces.VM_NAMESPACES] });
    expect(rendered.roles.map((r) => `${r.metadata.namespace}/${r.metadata.name}`).sort()).toEqual(expected.sort());
    for (const account of Object.values(rbacTable)) {
      for (const setting of ['BMH_NAMESPACE', 'VM_NAMESPACES'] as const) {
        if (grantsIn(account, setting).length === 0) continue;
        for (const ns of namespaces[setting])
          expect(roleAndBinding(rendered, ns, settingRoleName(account, setting))).toEqual(
            expectedRoleAndBinding(account, grantsIn(account, setting), install),
          );
      }
    }
  });

  it('has one ClusterRole per account (resources live in users’ namespaces)', () => {
    expect(manifests.clusterRoles.map((r) => r.metadata.name).sort()).toEqual(
      Object.values(rbacTable)
        .map((a) => a.clusterRole)
        .sort(),
    );
  });

  it.each(Object.entries(rbacTable))('%s: the ClusterRole grants exactly the table', (_, account) => {
    const role = manifests.clusterRoles.find((r) => r.metadata.name === account.clusterRole);
    expect(role).toBeDefined();
    expect(keysOf(role?.rules ?? [])).toEqual(keysOf(grantsAsRules(account.grants)));
  });

  it.each(Object.entries(rbacTable))(
    '%s: one binding gives the role to the ServiceAccount in bpa-system',
    (_, account) => {
      const bindings = manifests.clusterRoleBindings.filter((b) => b.roleRef.name === account.clusterRole);
      expect(bindings.map((b) => b.subjects)).toEqual([
        [{ kind: 'ServiceAccount', name: account.serviceAccount, namespace: 'bpa-system' }],
      ]);
      expect(
        manifests.serviceAccounts.filter(
          (sa) => sa.metadata.name === account.serviceAccount && sa.metadata.namespace === 'bpa-system',
        ),
      ).toHaveLength(1);
    },
  );

  it('grants none of the forbidden samples to any account', () => {
    for (const account of Object.values(rbacTable)) {
      const granted = new Set(permissionsOf(grantsAsRules(allGrantsOf(account))).map(permissionKey));
      for (const sample of forbiddenSamplesFor(account.serviceAccount)) {
        // A name-limited sample is also granted by a rule without names.
        const unnamed = permissionKey({ ...sample, resourceName: undefined });
        expect([account.serviceAccount, granted.has(permissionKey(sample)) || granted.has(unnamed)]).toEqual([
          account.serviceAccount,
          false,
        ]);
      }
    }
  });
});

/** The docs table's *namespaces* cell of a grant. */
const namespacesOf = (account: Account, grant: object) =>
  'namespace' in grant && typeof grant.namespace === 'string'
    ? grant.namespace
    : (account.installNamespaceGrants ?? []).includes(grant as never)
      ? 'install'
      : 'all';

describe('docs/deploy.md RBAC table', () => {
  // Rows between the markers: | account | API group | resource | verbs | names | namespaces | why |
  const doc = readFileSync(join(repoRoot, 'docs', 'deploy.md'), 'utf8');
  const section = /<!-- rbac-table:start -->([\s\S]*?)<!-- rbac-table:end -->/.exec(doc)?.[1] ?? '';
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line) && !line.includes('API group'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim().replace(/`/g, '')),
    );

  it('lists every grant of every account, and nothing else', () => {
    const documented = rows
      .flatMap(([account = '', group = '', resource = '', verbs = '', names = '']) =>
        verbs.split(',').flatMap((verb) => {
          const base = { group: group === 'core' ? '' : group, resource, verb: verb.trim() };
          const list = names === '' || names === 'any' ? [undefined] : names.split(',').map((n) => n.trim());
          return list.map((resourceName) => `${account} ${permissionKey({ ...base, resourceName })}`);
        }),
      )
      .sort();
    const expected = Object.values(rbacTable)
      .flatMap((a) =>
        permissionsOf(grantsAsRules(allGrantsOf(a))).map((p) => `${a.serviceAccount} ${permissionKey(p)}`),
      )
      .sort();
    expect(documented).toEqual(expected);
  });

  it('says why for every grant, as the table does', () => {
    const documented = rows.map(([account, group, resource, , names, namespaces, why]) => [
      `${account} ${group === 'core' ? '' : group}/${resource} ${names} ${namespaces}`,
      why,
    ]);
    const expected = Object.values(rbacTable).flatMap((a) =>
      allGrantsOf(a).map((g) => [
        `${a.serviceAccount} ${g.group}/${g.resource} ${g.resourceNames?.join(', ') ?? 'any'} ${namespacesOf(a, g)}`,
        g.why,
      ]),
    );
    expect(documented).toEqual(expected);
  });
});

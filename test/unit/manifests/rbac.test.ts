import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './kustomize.js';
import { renderedManifests } from './manifest-set.js';
import { allGrantsOf, forbiddenSamplesFor, permissionKey, permissionsOf, rbacTable, grantsAsRules } from './rbac-table.js';

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

  it('has a Role (and RoleBinding) in bpa-system exactly for the install-namespace grants', () => {
    const namespaced = Object.values(rbacTable).filter((a) => (a.installNamespaceGrants ?? []).length > 0);
    expect(manifests.roles.map((r) => `${r.metadata.namespace}/${r.metadata.name}`).sort()).toEqual(
      namespaced.map((a) => `bpa-system/${a.clusterRole}`).sort(),
    );
    for (const account of namespaced) {
      const role = manifests.roles.find((r) => r.metadata.name === account.clusterRole);
      expect(keysOf(role?.rules ?? [])).toEqual(keysOf(grantsAsRules(account.installNamespaceGrants ?? [])));
      const bindings = manifests.roleBindings.filter((b) => b.roleRef.name === account.clusterRole);
      expect(bindings.map((b) => [b.metadata.namespace, b.subjects])).toEqual([
        ['bpa-system', [{ kind: 'ServiceAccount', name: account.serviceAccount, namespace: 'bpa-system' }]],
      ]);
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

describe('docs/deploy.md RBAC table', () => {
  // Rows between the markers: | account | API group | resource | verbs | names | why |
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
    const documented = rows.map(([account, group, resource, , names, why]) => [
      `${account} ${group === 'core' ? '' : group}/${resource} ${names}`,
      why,
    ]);
    const expected = Object.values(rbacTable).flatMap((a) =>
      allGrantsOf(a).map((g) => [
        `${a.serviceAccount} ${g.group}/${g.resource} ${g.resourceNames?.join(', ') ?? 'any'}`,
        g.why,
      ]),
    );
    expect(documented).toEqual(expected);
  });
});

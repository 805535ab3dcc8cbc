import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { kustomize, kustomizeDocOverlays, manifestsDir, parseObjects, repoRoot } from './kustomize.js';
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
  clusterWideReadable,
  renderRbacTable,
  tenantRoleName,
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

  it('has one ClusterRole per account, and one `:tenant` ClusterRole per account that writes in tenants’ namespaces', () => {
    expect(manifests.clusterRoles.map((r) => r.metadata.name).sort()).toEqual(
      Object.values(rbacTable)
        .flatMap((a) => [a.clusterRole, ...((a.tenantGrants ?? []).length > 0 ? [tenantRoleName(a)] : [])])
        .sort(),
    );
  });

  it.each(Object.entries(rbacTable))('%s: the ClusterRole grants exactly the table', (_, account) => {
    const role = manifests.clusterRoles.find((r) => r.metadata.name === account.clusterRole);
    expect(role).toBeDefined();
    expect(keysOf(role?.rules ?? [])).toEqual(keysOf(grantsAsRules(account.grants)));
    const tenant = manifests.clusterRoles.find((r) => r.metadata.name === tenantRoleName(account));
    expect(keysOf(tenant?.rules ?? [])).toEqual(keysOf(grantsAsRules(account.tenantGrants ?? [])));
  });

  it('grants cluster-wide only reads, and to the functions only of the project’s own resources', () => {
    const { groups, resources, verbs } = clusterWideReadable;
    for (const [name, account] of Object.entries(rbacTable)) {
      const writes = permissionsOf(grantsAsRules(account.grants)).filter((p) => !verbs.includes(p.verb));
      expect({ name, writes }).toEqual({ name, writes: [] });
      // The ApiServerSource adapters (Knative's code) watch what they are told; the Job source
      // reads Jobs, which install Jobs make a tenant resource.
      if (name.endsWith('-source')) continue;
      const foreign = permissionsOf(grantsAsRules(account.grants)).filter(
        (p) => !groups.includes(p.group) || !resources.includes(p.resource),
      );
      expect({ name, foreign }).toEqual({ name, foreign: [] });
    }
  });

  it('binds no `:tenant` ClusterRole in manifests/ (only manifests/tenant does, per namespace)', () => {
    const tenantRoles = Object.values(rbacTable).map(tenantRoleName);
    expect(manifests.clusterRoleBindings.filter((b) => tenantRoles.includes(b.roleRef.name))).toEqual([]);
    expect(manifests.roleBindings.filter((b) => tenantRoles.includes(b.roleRef.name))).toEqual([]);
  });

  it('manifests/tenant: one RoleBinding per `:tenant` ClusterRole, no namespace (kubectl -n places it), to the ServiceAccount in bpa-system', () => {
    const objects = parseObjects(kustomize(join(manifestsDir, 'tenant')));
    const expected = Object.values(rbacTable)
      .filter((a) => (a.tenantGrants ?? []).length > 0)
      .map((a) => ({
        kind: 'RoleBinding',
        name: tenantRoleName(a),
        namespace: undefined,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: tenantRoleName(a) },
        subjects: [{ kind: 'ServiceAccount', name: a.serviceAccount, namespace: 'bpa-system' }],
      }));
    expect(
      objects.map((o) => ({
        kind: o.kind,
        name: o.metadata.name,
        namespace: o.metadata.namespace,
        roleRef: (o as Record<string, unknown>).roleRef,
        subjects: (o as Record<string, unknown>).subjects,
      })),
    ).toEqual(expected);
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

describe('docs/security.md RBAC table', () => {
  it('is the table’s rendering (renderRbacTable), every grant with its step', () => {
    const doc = readFileSync(join(repoRoot, 'docs', 'security.md'), 'utf8');
    const section = /<!-- rbac-table:start -->\n([\s\S]*?)\n<!-- rbac-table:end -->/.exec(doc)?.[1] ?? '';
    expect(section).toEqual(renderRbacTable());
  });

  it('lists every permission of every account (the rendering is not empty)', () => {
    const rows = renderRbacTable().split('\n').slice(2);
    expect(rows).toHaveLength(Object.values(rbacTable).reduce((n, a) => n + allGrantsOf(a).length, 0));
    expect(rows.every((row) => row.split('|').length === 9)).toBe(true);
  });
});

/**
 * The RBAC design: every API call each function (and each ApiServerSource adapter) makes, and
 * nothing more. docs/deploy.md shows the same table (a test keeps them equal); the rendered
 * ClusterRoles must grant exactly this, and the integration test asks the API server
 * (`kubectl auth can-i`) for each row.
 */
export interface Grant {
  /** API group; '' is the core group. */
  group: string;
  /** Plural resource, with `/subresource` when it is one. */
  resource: string;
  verbs: string[];
  /** When set, the grant covers only objects with these names. */
  resourceNames?: string[];
}

export interface Account {
  /** ServiceAccount name in the install namespace. */
  serviceAccount: string;
  /** ClusterRole (and ClusterRoleBinding) name. */
  clusterRole: string;
  grants: Grant[];
}

const bpa = 'bpa.akraino.org';
const eventGrants: Grant[] = [
  { group: '', resource: 'events', verbs: ['create', 'patch'] },
  { group: 'events.k8s.io', resource: 'events', verbs: ['create', 'patch'] },
];

export const rbacTable: Record<string, Account> = {
  'host-lookup': {
    serviceAccount: 'host-lookup',
    clusterRole: 'bpa-functions:host-lookup',
    grants: [
      { group: bpa, resource: 'provisionings', verbs: ['get', 'list'] },
      { group: bpa, resource: 'provisionings/status', verbs: ['get', 'update', 'patch'] },
      { group: 'metal3.io', resource: 'baremetalhosts', verbs: ['get', 'list'] },
      { group: '', resource: 'pods', verbs: ['list'] },
      { group: '', resource: 'configmaps', verbs: ['get'] },
      ...eventGrants,
    ],
  },
  'inventory-render': {
    serviceAccount: 'inventory-render',
    clusterRole: 'bpa-functions:inventory-render',
    grants: [
      { group: bpa, resource: 'provisionings', verbs: ['get'] },
      { group: bpa, resource: 'provisionings/status', verbs: ['get', 'update', 'patch'] },
      { group: '', resource: 'configmaps', verbs: ['get', 'create', 'update', 'patch'] },
      ...eventGrants,
    ],
  },
  'kud-job-launch': {
    serviceAccount: 'kud-job-launch',
    clusterRole: 'bpa-functions:kud-job-launch',
    grants: [
      { group: bpa, resource: 'provisionings', verbs: ['get', 'list'] },
      { group: bpa, resource: 'provisionings/status', verbs: ['get', 'update', 'patch'] },
      { group: 'batch', resource: 'jobs', verbs: ['get', 'list', 'create', 'delete'] },
      { group: '', resource: 'configmaps', verbs: ['get', 'create', 'update', 'patch'] },
      ...eventGrants,
    ],
  },
  'software-install': {
    serviceAccount: 'software-install',
    clusterRole: 'bpa-functions:software-install',
    grants: [
      { group: bpa, resource: 'softwares', verbs: ['get', 'list'] },
      { group: bpa, resource: 'softwares/status', verbs: ['get', 'update', 'patch'] },
      { group: '', resource: 'configmaps', verbs: ['get', 'list'] },
      { group: '', resource: 'secrets', verbs: ['get'], resourceNames: ['ssh-key-secret'] },
      ...eventGrants,
    ],
  },
  'resource-source': {
    serviceAccount: 'bpa-resource-source',
    clusterRole: 'bpa-functions:resource-source',
    grants: [
      { group: bpa, resource: 'provisionings', verbs: ['get', 'list', 'watch'] },
      { group: bpa, resource: 'softwares', verbs: ['get', 'list', 'watch'] },
    ],
  },
  'job-source': {
    serviceAccount: 'bpa-job-source',
    clusterRole: 'bpa-functions:job-source',
    grants: [{ group: 'batch', resource: 'jobs', verbs: ['get', 'list', 'watch'] }],
  },
};

/** One permission: `verb` on `group/resource` (limited to `resourceName` when set). */
export interface Permission {
  group: string;
  resource: string;
  verb: string;
  resourceName?: string;
}

export const permissionKey = (p: Permission) =>
  `${p.verb} ${p.group === '' ? 'core' : p.group}/${p.resource}${p.resourceName ? `:${p.resourceName}` : ''}`;

/** Flattens grants (or rendered rules) to one permission per verb, resource and name. */
export function permissionsOf(
  rules: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[],
): Permission[] {
  return rules.flatMap((rule) =>
    rule.apiGroups.flatMap((group) =>
      rule.resources.flatMap((resource) =>
        rule.verbs.flatMap((verb) =>
          rule.resourceNames && rule.resourceNames.length > 0
            ? rule.resourceNames.map((resourceName) => ({ group, resource, verb, resourceName }))
            : [{ group, resource, verb }],
        ),
      ),
    ),
  );
}

export const grantsAsRules = (grants: Grant[]) =>
  grants.map((g) => ({
    apiGroups: [g.group],
    resources: [g.resource],
    verbs: g.verbs,
    ...(g.resourceNames ? { resourceNames: g.resourceNames } : {}),
  }));

/**
 * What no account may do, whatever the table says: checked against every account (the
 * integration test also compares each account's complete rule list with the table).
 */
export const forbiddenSamples: Permission[] = [
  { group: '', resource: 'secrets', verb: 'delete' },
  { group: '', resource: 'secrets', verb: 'list' },
  { group: '', resource: 'secrets', verb: 'get', resourceName: 'some-other-secret' },
  { group: '', resource: 'pods', verb: 'create' },
  { group: bpa, resource: 'provisionings', verb: 'update' },
  { group: bpa, resource: 'softwares', verb: 'patch' },
  { group: 'batch', resource: 'jobs', verb: 'update' },
  { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', verb: 'create' },
];

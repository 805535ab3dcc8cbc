/**
 * The RBAC design: every API call each function (and each ApiServerSource adapter) makes, and
 * nothing more. docs/deploy.md shows the same table (a test keeps them equal, `why` included);
 * the rendered ClusterRoles must grant exactly this; test/integration/manifests/rbac.test.ts asks
 * the API server (`kubectl auth can-i`) for each row, and rbac-exercised.test.ts runs every
 * function as its own ServiceAccount and checks that the calls it makes are exactly these.
 */
export interface Grant {
  /** API group; '' is the core group. */
  group: string;
  /** Plural resource, with `/subresource` when it is one. */
  resource: string;
  verbs: string[];
  /** When set, the grant covers only objects with these names. */
  resourceNames?: string[];
  /** Which code makes these calls (docs/deploy.md's "why" column). */
  why: string;
  /**
   * Verbs of this grant held only so that the API server lets the account create a Role that
   * grants them (RBAC's escalation check), not called by the account itself: the exercised
   * suite does not expect calls for them, and the forbidden samples allow them here only.
   */
  heldForRoles?: string[];
  /**
   * Held only to be granted on: the account makes none of these calls itself, but gives them to
   * the Role of a Job it creates, and RBAC lets nobody grant what it does not hold (no
   * `escalate`). The Job's ServiceAccount makes the calls (rbac-exercised.test.ts checks it).
   */
  delegated?: true;
}

/**
 * The namespaces a setting names, where a grant holds (a Role there, never the ClusterRole):
 * BMH_NAMESPACE (shipped: a Role in `metal3`, moved by manifests/kustomization.yaml's
 * replacements) and VM_NAMESPACES (shipped empty: no Role at all; the operator adds one per VM
 * namespace, docs/deploy.md "Hosts and VM namespaces").
 */
export type SettingNamespace = 'BMH_NAMESPACE' | 'VM_NAMESPACES';

export interface NamespacedGrant extends Grant {
  /** The setting that names the namespace(s) this grant applies in. */
  namespace: SettingNamespace;
}

/** The namespaces of the shipped install (manifests/config/bpa-config.yaml). */
export const shippedNamespaces: Record<SettingNamespace, string[]> = { BMH_NAMESPACE: ['metal3'], VM_NAMESPACES: [] };

/** The Role (and RoleBinding) name of an account's grants in a setting's namespaces. */
export const settingRoleName = (account: Account, setting: SettingNamespace) =>
  `${account.clusterRole}-${setting === 'BMH_NAMESPACE' ? 'hosts' : 'vms'}`;

export interface Account {
  /** ServiceAccount name in the install namespace. */
  serviceAccount: string;
  /** ClusterRole (and ClusterRoleBinding) name. */
  clusterRole: string;
  grants: Grant[];
  /**
   * Grants that only concern the functions' own (install) namespace: a Role and RoleBinding of
   * the ClusterRole's name there, never cluster-wide (the cluster-name claims, `kud-installer`).
   */
  installNamespaceGrants?: Grant[];
  /** Grants held only in the namespaces a setting names (BMH_NAMESPACE, VM_NAMESPACES). */
  namespacedGrants?: NamespacedGrant[];
}

/** Every grant of an account: cluster-wide, in the install namespace, in configured namespaces. */
export const allGrantsOf = (account: Account | undefined): Grant[] => [
  ...(account?.grants ?? []),
  ...(account?.installNamespaceGrants ?? []),
  ...(account?.namespacedGrants ?? []),
];

/** An account's grants in the namespaces of one setting. */
export const grantsIn = (account: Account | undefined, setting: SettingNamespace): Grant[] =>
  (account?.namespacedGrants ?? []).filter((g) => g.namespace === setting);

const bpa = 'bpa.akraino.org';
// shared/k8s/events.ts: core/v1 Events only; create, then a JSON patch of count/lastTimestamp
// for a repeat of the same Event (no get: the count is remembered in the process).
const eventGrant: Grant = {
  group: '',
  resource: 'events',
  verbs: ['create', 'patch'],
  why: 'recordEvent: create an Event, patch count and lastTimestamp when the same Event repeats',
};
// shared/k8s/status-writer.ts: the object is read through the main resource (get), and the
// status replaced whole with the read resourceVersion (PUT .../status = update). No patch.
const statusWhy = 'status written by replace (PUT .../status) with the read resourceVersion';

export const rbacTable: Record<string, Account> = {
  'host-lookup': {
    serviceAccount: 'host-lookup',
    clusterRole: 'bpa-functions:host-lookup',
    grants: [
      {
        group: bpa,
        resource: 'provisionings',
        verbs: ['get', 'list'],
        why: 'get: the Provisioning an event names, and before each status write; list: the sweep (all namespaces unless SWEEP_NAMESPACES)',
      },
      { group: bpa, resource: 'provisionings/status', verbs: ['update'], why: `HostsResolved, Ready, status.nodes: ${statusWhy}` },
      {
        group: bpa,
        resource: 'provisionings',
        verbs: ['patch'],
        why: 'adds the bpa.akraino.org/cleanup finalizer (JSON patch of metadata.finalizers only)',
      },
      { group: bpa, resource: 'images', verbs: ['get'], why: 'spec.image of a Provisioning: the Image it names, in its namespace (must be Ready)' },
      {
        group: '',
        resource: 'configmaps',
        verbs: ['get'],
        why: 'the lease ConfigMap of LEASES_SOURCE=configmap:…; the sweep re-reads <cluster>-inventory to re-send inventory.rendered',
      },
      eventGrant,
    ],
    installNamespaceGrants: [
      {
        group: 'coordination.k8s.io',
        resource: 'leases',
        verbs: ['get', 'create', 'delete'],
        why: '(install namespace only) the cluster-name claims cluster-<cluster>: read, create, delete an abandoned one',
      },
    ],
    namespacedGrants: [
        {
          group: 'metal3.io',
          resource: 'baremetalhosts',
          verbs: ['list', 'watch'],
          namespace: 'BMH_NAMESPACE',
          why: 'the MAC index kept while warm: a paged list, then a watch, in BMH_NAMESPACE (shipped: metal3; all namespaces only when set empty on purpose, with a ClusterRole the operator adds); a list again for an unknown MAC or a changed host',
        },
          {
          group: 'metal3.io',
          resource: 'baremetalhosts',
          verbs: ['get', 'patch'],
          namespace: 'BMH_NAMESPACE',
          why: 'spec.image of a Provisioning: each resolved host read, then spec.image and the bpa.akraino.org/image annotation merge-patched (with the read resourceVersion) where unset or ours',
        },
        {
          group: '',
          resource: 'pods',
          verbs: ['list'],
          namespace: 'VM_NAMESPACES',
          why: 'virtlet-vm clusters only: running VM pods, in each of the VM_NAMESPACES (shipped: none, so no Role; the operator adds one per VM namespace), never all namespaces',
        },
    ],
  },
  'inventory-render': {
    serviceAccount: 'inventory-render',
    clusterRole: 'bpa-functions:inventory-render',
    grants: [
      { group: bpa, resource: 'provisionings', verbs: ['get'], why: 'the Provisioning of hosts.resolved, and before each status write' },
      { group: bpa, resource: 'provisionings/status', verbs: ['update'], why: `InventoryRendered, Ready: ${statusWhy}` },
      {
        group: '',
        resource: 'configmaps',
        verbs: ['get', 'create', 'update'],
        why: '<cluster>-inventory upserted: get, then create, or replace (update) when its content changed',
      },
      eventGrant,
    ],
  },
  'kud-job-launch': {
    serviceAccount: 'kud-job-launch',
    clusterRole: 'bpa-functions:kud-job-launch',
    grants: [
      {
        group: bpa,
        resource: 'provisionings',
        verbs: ['get', 'list'],
        why: 'get: the Provisioning of an event or of a Job, and before each status write; list: the sweep (all namespaces unless SWEEP_NAMESPACES)',
      },
      { group: bpa, resource: 'provisionings/status', verbs: ['update'], why: `JobLaunched, KudInstalled, Ready, jobName: ${statusWhy}` },
      {
        group: bpa,
        resource: 'provisionings',
        verbs: ['patch'],
        why: 'removes the bpa.akraino.org/cleanup finalizer after the deletion cleanup (JSON patch of metadata.finalizers only)',
      },
      {
        group: 'batch',
        resource: 'jobs',
        verbs: ['get', 'create', 'delete'],
        why: 'kud-<cluster>: create (a 409 reads the existing one), get on a Job update and in the sweep, delete (uid precondition) a finished Job whose launch hash changed, a cancelled one, the Jobs of a renamed cluster; never a list',
      },
      {
        group: '',
        resource: 'pods',
        verbs: ['list'],
        why: 'the sweep: the running Job’s pod (label job-name), its phase and waiting reason for status.job',
      },
      {
        group: '',
        resource: 'configmaps',
        verbs: ['get', 'create', 'update', 'delete'],
        why: 'get: <cluster>-inventory; <cluster>-configmap upserted: get, then create, or replace (update) when the node IPs changed; delete (uid precondition, ours only): <old>-inventory and <old>-configmap of a renamed cluster',
      },
      eventGrant,
      {
        group: '',
        resource: 'secrets',
        verbs: ['get', 'create', 'update'],
        heldForRoles: ['update'],
        why: 'the kubeconfig publisher: get <cluster>-admin-kubeconfig, create it empty when absent; update is held, never called: the API server lets only a holder of get and update create the publisher’s Role that grants them on that one Secret',
      },
      {
        group: '',
        resource: 'serviceaccounts',
        verbs: ['get', 'create'],
        why: 'the kubeconfig publisher’s ServiceAccount kud-<cluster>-kubeconfig: get, then create when absent',
      },
      {
        group: 'rbac.authorization.k8s.io',
        resource: 'roles',
        verbs: ['get', 'create'],
        why: 'the kubeconfig publisher’s Role (get and update of <cluster>-admin-kubeconfig only): get, then create when absent',
      },
      {
        group: 'rbac.authorization.k8s.io',
        resource: 'rolebindings',
        verbs: ['get', 'create'],
        why: 'the kubeconfig publisher’s RoleBinding: get, then create when absent',
      },
    ],
    installNamespaceGrants: [
      {
        group: 'coordination.k8s.io',
        resource: 'leases',
        verbs: ['get', 'delete'],
        why: '(install namespace only) releases the cluster-name claim when a Provisioning is deleted, and the old name of a renamed cluster once its objects are gone',
      },
    ],
  },
  'software-install': {
    serviceAccount: 'software-install',
    clusterRole: 'bpa-functions:software-install',
    grants: [
      {
        group: bpa,
        resource: 'softwares',
        verbs: ['get', 'list'],
        why: 'get: the Software an event names, and before each status write; list: by label cluster= on cluster.ready and for trust-on-first-use fingerprints, and the sweep (all namespaces unless SWEEP_NAMESPACES)',
      },
      {
        group: bpa,
        resource: 'softwares/status',
        verbs: ['update'],
        why: `Installed, Ready, status.hosts, the install claim: ${statusWhy}`,
      },
      {
        group: bpa,
        resource: 'provisionings',
        verbs: ['list'],
        why: 'installs wait until the Provisioning of the cluster is Ready for its current generation: listed by label cluster=, the ConfigMap’s owner when it names one',
      },
      {
        group: '',
        resource: 'configmaps',
        verbs: ['list'],
        why: '<cluster>-configmap found by label cluster=<cluster> in the Software’s namespace; never a get',
      },
      {
        group: '',
        resource: 'secrets',
        verbs: ['get'],
        resourceNames: ['ssh-key-secret'],
        why: 'the SSH key Secret (SSH_KEY_SECRET) in the Software’s namespace, by name; known_hosts is a mounted file',
      },
      eventGrant,
      {
        group: 'batch',
        resource: 'jobs',
        verbs: ['get', 'create'],
        why: 'the install Job <software>-install-<generation>[-<run>]: create (a 409 reads the existing one); get: a Job that ended without recording an outcome (its pods crashed, its deadline) fails the Software; never a list',
      },
      {
        group: '',
        resource: 'serviceaccounts',
        verbs: ['create'],
        why: 'the install Job’s ServiceAccount <software>-installer, owned by the Software',
      },
      {
        group: 'rbac.authorization.k8s.io',
        resource: 'roles',
        verbs: ['create', 'update'],
        why: 'the install Job’s Role <software>-installer (its own Software’s status, by name): create; replace (update) when SSH_KEY_SECRET changed',
      },
      {
        group: 'rbac.authorization.k8s.io',
        resource: 'rolebindings',
        verbs: ['create'],
        why: 'binds the install Job’s Role to its ServiceAccount',
      },
      {
        group: 'coordination.k8s.io',
        resource: 'leases',
        verbs: ['get', 'create', 'update'],
        why: '(delegated: held only to grant it to the install Job’s Role, which RBAC allows only to a holder) the install Job takes the host Leases bpa-apt-<ip> in the Software’s namespace',
        delegated: true,
      },
    ],
  },
  'resource-source': {
    serviceAccount: 'bpa-resource-source',
    clusterRole: 'bpa-functions:resource-source',
    grants: [
      {
        group: bpa,
        resource: 'provisionings',
        verbs: ['get', 'list', 'watch'],
        why: 'Knative’s ApiServerSource adapter (not our code: checked with can-i only), in every namespace',
      },
      {
        group: bpa,
        resource: 'softwares',
        verbs: ['get', 'list', 'watch'],
        why: 'Knative’s ApiServerSource adapter (not our code: checked with can-i only), in every namespace',
      },
    ],
  },
  'job-source': {
    serviceAccount: 'bpa-job-source',
    clusterRole: 'bpa-functions:job-source',
    grants: [
      {
        group: 'batch',
        resource: 'jobs',
        verbs: ['get', 'list', 'watch'],
        why: 'Knative’s ApiServerSource adapter (not our code: checked with can-i only), Jobs labelled managed-by=bpa-functions',
      },
    ],
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

/** The forbidden samples for one account: all but those the table says it holds (`heldBy`). */
export const forbiddenSamplesFor = (serviceAccount: string): Permission[] =>
  forbiddenSamples
    .filter((sample) => !sample.heldBy?.includes(serviceAccount))
    .map(({ heldBy: _, ...permission }) => permission);

/**
 * The grants as the calls the account makes: without the grants it holds only to delegate and the
 * verbs it holds only for Roles it creates.
 */
export const calledGrants = (grants: Grant[]): Grant[] =>
  grants
    .filter((g) => !g.delegated)
    .map((g) => ({ ...g, verbs: g.verbs.filter((verb) => !g.heldForRoles?.includes(verb)) }))
    .filter((g) => g.verbs.length > 0);

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
export const forbiddenSamples: (Permission & { heldBy?: string[] })[] = [
  { group: '', resource: 'secrets', verb: 'delete' },
  { group: '', resource: 'secrets', verb: 'list' },
  // kud-job-launch: the kubeconfig publisher's Role (see its secrets grant, docs/adr/0009).
  { group: '', resource: 'secrets', verb: 'get', resourceName: 'some-other-secret', heldBy: ['kud-job-launch'] },
  { group: '', resource: 'pods', verb: 'create' },
  { group: bpa, resource: 'provisionings', verb: 'update' },
  { group: bpa, resource: 'softwares', verb: 'patch' },
  { group: 'batch', resource: 'jobs', verb: 'update' },
  { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', verb: 'create' },
  // Granted once, never called (the code replaces status, upserts by replace, writes core Events).
  { group: bpa, resource: 'provisionings/status', verb: 'patch' },
  { group: '', resource: 'configmaps', verb: 'patch' },
  { group: 'events.k8s.io', resource: 'events', verb: 'create' },
];

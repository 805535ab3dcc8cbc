/**
 * The RBAC design (contract section 12, docs/adr/0013-tenancy.md point 4): every API call each
 * function (and each ApiServerSource adapter) makes, where it makes it, and nothing more.
 *
 * Where a grant holds is its place in the account:
 * - `grants`: cluster-wide (the ClusterRole `bpa-functions:<account>` and its ClusterRoleBinding).
 *   Only reads (get, list, watch) of the project's own resources: Provisionings, Softwares, Images
 *   (the unit test refuses anything else), and the ApiServerSource adapters' watches.
 * - `installNamespaceGrants`: the functions' own namespace (`bpa-system` as shipped): a Role and
 *   RoleBinding `bpa-functions:<account>` there.
 * - `namespacedGrants`: the namespaces a setting names (BMH_NAMESPACE, VM_NAMESPACES): Roles there.
 * - `tenantGrants`: what the function writes in a tenant's namespace: the ClusterRole
 *   `bpa-functions:<account>:tenant`, bound in each onboarded namespace by a RoleBinding of
 *   manifests/tenant (`kubectl apply -n <namespace> -k manifests/tenant`), nowhere else.
 *
 * docs/security.md shows this table (generated: `renderRbacTable()`; a unit test keeps them
 * equal); the rendered roles must grant exactly this; test/integration/manifests/rbac.test.ts asks
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
  /** Which code makes these calls (the docs' "why" column). */
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

/** The ClusterRole of an account's tenant grants, bound per onboarded namespace by manifests/tenant. */
export const tenantRoleName = (account: Account) => `${account.clusterRole}:tenant`;

export interface Account {
  /** ServiceAccount name in the install namespace. */
  serviceAccount: string;
  /** ClusterRole (and ClusterRoleBinding) name. */
  clusterRole: string;
  /** Cluster-wide: reads of the project's own resources only. */
  grants: Grant[];
  /**
   * Grants that only concern the functions' own (install) namespace: a Role and RoleBinding of
   * the ClusterRole's name there, never cluster-wide (the cluster-name claims, `kud-installer`).
   */
  installNamespaceGrants?: Grant[];
  /** Grants held only in the namespaces a setting names (BMH_NAMESPACE, VM_NAMESPACES). */
  namespacedGrants?: NamespacedGrant[];
  /** Grants held only in onboarded tenant namespaces (`bpa-functions:<account>:tenant`). */
  tenantGrants?: Grant[];
}

/** Every grant of an account: cluster-wide, in the install namespace, configured and tenant namespaces. */
export const allGrantsOf = (account: Account | undefined): Grant[] => [
  ...(account?.grants ?? []),
  ...(account?.installNamespaceGrants ?? []),
  ...(account?.namespacedGrants ?? []),
  ...(account?.tenantGrants ?? []),
];

/** An account's grants in the namespaces of one setting. */
export const grantsIn = (account: Account | undefined, setting: SettingNamespace): Grant[] =>
  (account?.namespacedGrants ?? []).filter((g) => g.namespace === setting);

/** Where a grant holds, as the docs' *namespaces* column says it. */
export type Place = 'all' | 'functions' | 'tenant' | SettingNamespace;
export const placeOf = (account: Account, grant: Grant): Place =>
  'namespace' in grant && typeof grant.namespace === 'string'
    ? (grant.namespace as SettingNamespace)
    : (account.installNamespaceGrants ?? []).includes(grant)
      ? 'functions'
      : (account.tenantGrants ?? []).includes(grant)
        ? 'tenant'
        : 'all';

const bpa = 'bpa.akraino.org';
// shared/k8s/events.ts: core/v1 Events only; create, then a JSON patch of count/lastTimestamp
// for a repeat of the same Event (no get: the count is remembered in the process).
const eventGrant: Grant = {
  group: '',
  resource: 'events',
  verbs: ['create', 'patch'],
  why: 'recordEvent: create an Event about the resource in its namespace, patch count and lastTimestamp when the same Event repeats',
};
// shared/k8s/status-apply.ts: every status write is a server-side apply (PATCH .../status), one
// field manager per writer, with the read resourceVersion; the object is read through the main
// resource (get). No update.
const statusWhy = 'by server-side apply (patch, field manager bpa-software-install) with the read resourceVersion';

export const rbacTable: Record<string, Account> = {
  'host-lookup': {
    serviceAccount: 'host-lookup',
    clusterRole: 'bpa-functions:host-lookup',
    grants: [
      {
        group: bpa,
        resource: 'provisionings',
        verbs: ['get', 'list', 'watch'],
        why: 'get: the Provisioning an event names, and before each status write; list: the sweep (all namespaces unless SWEEP_NAMESPACES); list and watch: the server’s watch, which spares the get of an event at the version it holds',
      },
      { group: bpa, resource: 'images', verbs: ['get'], why: 'spec.image of a Provisioning: the Image it names, in its namespace (must be Ready)' },
    ],
    tenantGrants: [
      {
        group: bpa,
        resource: 'provisionings/status',
        verbs: ['patch'],
        why: 'HostsResolved, Ready, status.nodes, the handled labels and retry: by server-side apply (patch, field manager bpa-host-lookup) with the read resourceVersion; a JSON patch drops what another function wrote when the chain re-runs',
      },
      {
        group: bpa,
        resource: 'provisionings',
        verbs: ['patch'],
        why: 'adds the bpa.akraino.org/cleanup finalizer (JSON patch of metadata.finalizers only)',
      },
      {
        group: '',
        resource: 'configmaps',
        verbs: ['get'],
        why: 'the sweep re-reads <cluster>-inventory to re-send inventory.rendered; the lease ConfigMap of LEASES_SOURCE=configmap:<namespace>/… (that namespace onboarded)',
      },
      eventGrant,
    ],
    installNamespaceGrants: [
      {
        group: 'coordination.k8s.io',
        resource: 'leases',
        verbs: ['get', 'create', 'delete'],
        why: 'the cluster-name claims cluster-<cluster>: read, create, delete an abandoned one',
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
        why: 'host claims: spec.consumerRef merge-patched with the index’s resourceVersion (get again after a 409), and removed on release; spec.image of a Provisioning: each claimed host read, then spec.image and the bpa.akraino.org/image annotation merge-patched (with the read resourceVersion) where unset or ours',
      },
      {
        group: '',
        resource: 'pods',
        verbs: ['list'],
        namespace: 'VM_NAMESPACES',
        why: 'virtlet-vm clusters only: running VM pods, in each of the VM_NAMESPACES (shipped: none, so no Role; the operator adds one per VM namespace), never all namespaces',
      },
      {
        group: '',
        resource: 'pods',
        verbs: ['get', 'patch'],
        namespace: 'VM_NAMESPACES',
        why: 'VM claims: the bpa.akraino.org/consumer annotation merge-patched with the pod’s resourceVersion (get again after a 409), and removed on release',
      },
      {
        group: 'kubevirt.io',
        resource: 'virtualmachineinstances',
        verbs: ['list'],
        namespace: 'VM_NAMESPACES',
        why: 'kubevirt-vm clusters only: KubeVirt’s VirtualMachineInstances, one list per invocation in each of the VM_NAMESPACES (only Running ones count), never all namespaces; no watch: nothing is kept between invocations',
      },
      {
        group: 'kubevirt.io',
        resource: 'virtualmachineinstances',
        verbs: ['get', 'patch'],
        namespace: 'VM_NAMESPACES',
        why: 'VM claims of a VMI: the bpa.akraino.org/consumer annotation merge-patched with the VMI’s resourceVersion (get again after a 409), and removed on release',
      },
    ],
  },
  'inventory-render': {
    serviceAccount: 'inventory-render',
    clusterRole: 'bpa-functions:inventory-render',
    grants: [
      {
        group: bpa,
        resource: 'provisionings',
        verbs: ['get', 'list', 'watch'],
        why: 'get: the Provisioning of hosts.resolved, and before each status write; list and watch: the server’s watch, which spares the get of an event at the version it holds',
      },
    ],
    tenantGrants: [
      {
        group: bpa,
        resource: 'provisionings/status',
        verbs: ['patch'],
        why: 'InventoryRendered, Ready, status.ownedObjects: by server-side apply (patch, field manager bpa-inventory-render) with the read resourceVersion',
      },
      {
        group: '',
        resource: 'configmaps',
        verbs: ['get', 'create', 'update'],
        why: 'the tenant’s copy of <cluster>-inventory upserted: get, then create, or replace (update) when its content changed',
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
        verbs: ['get', 'list', 'watch'],
        why: 'get: the Provisioning of an event or of a Job, and before each status write; list: the sweep (all namespaces unless SWEEP_NAMESPACES); list and watch: the server’s watch, which spares the get of an event at the version it holds',
      },
    ],
    tenantGrants: [
      {
        group: bpa,
        resource: 'provisionings/status',
        verbs: ['patch'],
        why: 'JobLaunched, KudInstalled, Ready, status.job: by server-side apply (patch, field manager bpa-kud-job-launch) with the read resourceVersion',
      },
      {
        group: bpa,
        resource: 'provisionings',
        verbs: ['patch'],
        why: 'removes the bpa.akraino.org/cleanup finalizer after the deletion cleanup (JSON patch of metadata.finalizers only)',
      },
      {
        group: '',
        resource: 'configmaps',
        verbs: ['get', 'create', 'update', 'delete'],
        why: '<cluster>-configmap upserted: get, then create, or replace (update) when the node IPs changed; delete (uid precondition, ours only): <old>-configmap of a renamed cluster (the mounted inventory lives in the functions’ namespace)',
      },
      eventGrant,
      {
        group: '',
        resource: 'secrets',
        verbs: ['get', 'create', 'update'],
        why: '<cluster>-admin-kubeconfig, written from what the tokenless publisher printed to its log (docs/adr/0009): get, create when absent, replace (update) our own (by recorded uid) when the kubeconfig changed; get, before a node is removed from a Ready cluster, to drain it through that cluster\'s own API (contract section 14: no right on the functions\' cluster is used for the drain)',
      },
    ],
    installNamespaceGrants: [
      {
        group: 'coordination.k8s.io',
        resource: 'leases',
        verbs: ['get', 'delete'],
        why: 'releases the cluster-name claim when a Provisioning is deleted, and the old name of a renamed cluster once its objects are gone',
      },
      {
        group: '',
        resource: 'configmaps',
        verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'],
        why: 'kud-installer (the installer settings written into the KUD Job’s env; list and watch: the server’s watch of it, which spares that get at launch); the mounted <cluster>-inventory, written at launch from status.nodes: get, then create or replace; list and delete by the uid label on deletion and rename',
      },
      {
        group: 'batch',
        resource: 'jobs',
        verbs: ['get', 'list', 'watch', 'create', 'delete'],
        why: 'the KUD, cleanup and kubeconfig publisher Jobs (contract section 12): create (a 409 reads it), get on a Job update and in the sweep, delete (uid precondition) when replaced, cancelled or cleaned up; list by the Provisioning’s uid label on deletion and rename; list and watch: the server’s watch, which spares the get of the KUD Job at launch',
      },
      {
        group: '',
        resource: 'pods',
        verbs: ['list'],
        why: 'the Jobs’ pods by the Job’s controller uid: progress and node on status.job, the node the cleanup and publisher go to',
      },
      {
        group: '',
        resource: 'pods/log',
        verbs: ['get'],
        why: 'the KUD pod’s log tail: each node’s progress in status.nodes[] (its Ansible output) and a failed pod’s last lines for status.job.logTail; the publisher’s printed kubeconfig (docs/adr/0009; tenants cannot read pods in the functions’ namespace)',
      },
    ],
    namespacedGrants: [
      {
        group: 'metal3.io',
        resource: 'baremetalhosts',
        verbs: ['get', 'patch'],
        namespace: 'BMH_NAMESPACE',
        why: 'deletion, after cleanup: each host of status.claimedHosts read, its spec.consumerRef (and spec.image with the bpa.akraino.org/image annotation when bpa-functions wrote it) merge-patched away',
      },
      {
        group: '',
        resource: 'pods',
        verbs: ['get', 'patch'],
        namespace: 'VM_NAMESPACES',
        why: 'deletion, after cleanup: each VM pod of status.claimedHosts read, its bpa.akraino.org/consumer annotation merge-patched away',
      },
      {
        group: 'kubevirt.io',
        resource: 'virtualmachineinstances',
        verbs: ['get', 'patch'],
        namespace: 'VM_NAMESPACES',
        why: 'deletion, after cleanup: each VirtualMachineInstance of status.claimedHosts read, its bpa.akraino.org/consumer annotation merge-patched away',
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
        resource: 'provisionings',
        verbs: ['list'],
        why: 'installs wait until the Provisioning of the cluster is Ready for its current generation: listed by label cluster=, the ConfigMap’s owner when it names one',
      },
    ],
    tenantGrants: [
      {
        group: bpa,
        resource: 'softwares/status',
        verbs: ['patch'],
        why: `Installed, Ready, status.hosts, the install claim: ${statusWhy}`,
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
        verbs: ['get', 'create'],
        why: 'the install Job’s ServiceAccount <software>-installer, recorded by uid in status.ownedObjects; get: the one in the way of a create is ours only by that uid, else ObjectConflict, untouched',
      },
      {
        group: 'rbac.authorization.k8s.io',
        resource: 'roles',
        verbs: ['get', 'create', 'update'],
        why: 'the install Job’s Role <software>-installer (its own Software’s status, by name): create; get: the one in the way (ours only by recorded uid); replace (update) our own when SSH_KEY_SECRET changed, never a look-alike',
      },
      {
        group: 'rbac.authorization.k8s.io',
        resource: 'rolebindings',
        verbs: ['get', 'create'],
        why: 'binds the install Job’s Role to its ServiceAccount; get: the one in the way (ours only by recorded uid)',
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
        why: 'Knative’s ApiServerSource adapter (not our code: checked with can-i only), Jobs labelled managed-by=bpa-functions: a read, the one cluster-wide grant outside the project’s resources (install Jobs run in tenants’ namespaces)',
      },
    ],
  },
};

/** What an account may hold cluster-wide: reads only, of the project's own resources (ADR 0013 point 4). */
export const clusterWideReadable = {
  groups: [bpa],
  resources: ['provisionings', 'softwares', 'images'],
  verbs: ['get', 'list', 'watch'],
};

/** The docs' *namespaces* cell of each place. */
const placeCell: Record<Place, string> = {
  all: 'all (read)',
  functions: 'functions',
  tenant: 'tenant',
  BMH_NAMESPACE: '`BMH_NAMESPACE`',
  VM_NAMESPACES: '`VM_NAMESPACES`',
};

/**
 * The table docs/security.md shows between `<!-- rbac-table:start -->` and `<!-- rbac-table:end -->`
 * (`npx tsx -e` prints it; test/unit/manifests/rbac.test.ts compares).
 */
export function renderRbacTable(): string {
  const code = (text: string) => text.replace(/(<[^>]+>[A-Za-z0-9-]*|[A-Z][A-Z0-9]*_[A-Z_]+)/g, '`$1`');
  const lines = [
    '| ServiceAccount | API group | resource | verbs | names | namespaces | why |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const account of Object.values(rbacTable))
    for (const g of allGrantsOf(account))
      lines.push(
        `| \`${account.serviceAccount}\` | ${g.group === '' ? 'core' : `\`${g.group}\``} | \`${g.resource}\` | ${g.verbs.join(', ')} | ${g.resourceNames?.map((n) => `\`${n}\``).join(', ') ?? 'any'} | ${placeCell[placeOf(account, g)]} | ${code(g.why)} |`,
      );
  return lines.join('\n');
}

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
  // kud-job-launch: <cluster>-admin-kubeconfig in a tenant's namespace (see its secrets grant, docs/adr/0009).
  { group: '', resource: 'secrets', verb: 'get', resourceName: 'some-other-secret', heldBy: ['kud-job-launch'] },
  { group: '', resource: 'pods', verb: 'create' },
  { group: bpa, resource: 'provisionings', verb: 'update' },
  { group: bpa, resource: 'softwares', verb: 'patch' },
  { group: 'batch', resource: 'jobs', verb: 'update' },
  { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', verb: 'create' },
  // Status is never replaced (PUT): every status write is a server-side apply (patch).
  { group: bpa, resource: 'provisionings/status', verb: 'update' },
  { group: bpa, resource: 'softwares/status', verb: 'update' },
  // The Provisioning's status is patched (server-side apply) only by the chain's three functions.
  {
    group: bpa,
    resource: 'provisionings/status',
    verb: 'patch',
    heldBy: ['host-lookup', 'inventory-render', 'kud-job-launch'],
  },
  // Granted once, never called (the code upserts by replace, writes core Events).
  { group: '', resource: 'configmaps', verb: 'patch' },
  { group: 'events.k8s.io', resource: 'events', verb: 'create' },
];

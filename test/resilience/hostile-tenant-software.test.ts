/**
 * Hostile tenant, software-install (contract section 12, issue 23 items 5 and 8): each attack acts
 * as a tenant (test/resilience/support/tenant.ts: a ServiceAccount holding only its namespace's
 * rights; for the look-alike RBAC objects, plus what a namespace admin holds: Roles,
 * RoleBindings and ServiceAccounts of its own namespace), against the real kube-apiserver,
 * software-install's real HTTP server (ChainHarness) and real OpenSSH hosts
 * that record every session (test/support/sshd.ts). Each attack is recorded as gained nothing or
 * not in the resilience report ("Attacks").
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import {
  AuthorizationV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { definition as softwareInstall } from '../../functions/software-install/index.js';
import { installerServiceAccountName } from '../../functions/software-install/install-job/job-objects.js';
import { useTestCluster } from '../support/cluster.js';
import { asServiceAccount } from '../support/service-account-kubeconfig.js';
import { startSshHosts, type SshHosts } from '../support/sshd.js';
import { ChainHarness, sourceEvent } from '../integration/functions/support/chain-harness.js';
import { bpaGroup, createReadyProvisioning } from '../integration/functions/support/fixtures.js';
import { FaultTally } from './report/tally.js';
import { createTenant, tenantRules, type Tenant } from './support/tenant.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);
let lab: SshHosts;
let harness: ChainHarness;
let tenant: Tenant;

interface StoredSoftware {
  metadata: { name: string; namespace: string; uid: string; generation: number };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

const custom = (kubeConfig: KubeConfig) => kubeConfig.makeApiClient(CustomObjectsApi);
const softwareBody = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'bpa.akraino.org/v1alpha1',
  kind: 'Software',
  metadata: { name, labels: { cluster: 'hostile' } },
  spec,
});
const createSoftware = async (kubeConfig: KubeConfig, name: string, spec: Record<string, unknown>) =>
  (await custom(kubeConfig).createNamespacedCustomObject({
    ...bpaGroup,
    plural: 'softwares',
    namespace: cluster.namespace,
    body: softwareBody(name, spec),
  })) as StoredSoftware;
const readSoftware = async (name: string) =>
  (await custom(cluster.kubeConfig).getNamespacedCustomObject({
    ...bpaGroup,
    plural: 'softwares',
    namespace: cluster.namespace,
    name,
  })) as StoredSoftware;
const condition = (software: StoredSoftware, type: string) =>
  software.status?.conditions?.find((c) => c.type === type);
const sessions = () => lab.hosts.reduce((n, host) => n + host.commands().length, 0);
const jobsOf = async (name: string) =>
  (
    await cluster.kubeConfig.makeApiClient(BatchV1Api).listNamespacedJob({
      namespace: cluster.namespace,
      labelSelector: `bpa.akraino.org/software=${name}`,
    })
  ).items;

beforeAll(async () => {
  lab = await startSshHosts({ count: 1, firstAddress: 121 });
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({
    namespace: cluster.namespace,
    body: {
      metadata: { name: 'ssh-key-secret' },
      data: { id_rsa: Buffer.from(lab.privateKey).toString('base64') },
    },
  });
  await createReadyProvisioning(cluster.kubeConfig, cluster.namespace, 'hostile');
  await core.createNamespacedConfigMap({
    namespace: cluster.namespace,
    body: {
      metadata: { name: 'hostile-configmap', labels: { cluster: 'hostile' } },
      data: { MASTER_h1: lab.hosts[0]?.ip ?? '' },
    },
  });
  tenant = await createTenant(cluster.kubeConfig, cluster.namespace);
  // A namespace admin may also write Roles, RoleBindings and ServiceAccounts of its namespace
  // (with no rule it does not hold itself: RBAC's escalation check).
  const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace: cluster.namespace,
    body: {
      metadata: { name: 'tenant-rbac' },
      rules: [
        {
          apiGroups: ['rbac.authorization.k8s.io'],
          resources: ['roles', 'rolebindings'],
          verbs: ['get', 'list', 'create', 'update', 'delete'],
        },
        {
          apiGroups: [''],
          resources: ['serviceaccounts'],
          verbs: ['get', 'list', 'create', 'update', 'delete'],
        },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: cluster.namespace,
    body: {
      metadata: { name: 'tenant-rbac' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tenant-rbac' },
      subjects: [{ kind: 'ServiceAccount', name: tenant.serviceAccount, namespace: cluster.namespace }],
    },
  });
  harness = new ChainHarness(
    cluster.kubeConfig,
    {
      SSH_USER: lab.username,
      SSH_PORT: String(lab.port),
      INSTALL_JOB_IMAGE: 'registry.example/bpa/software-install:test',
    },
    { followInstallJobs: false },
  );
  await harness.start([softwareInstall]);
}, 120_000);
afterAll(async () => {
  await harness?.stop();
  await lab?.stopAll();
});

it('openssh-server- (apt-get: remove sshd) is rejected before any connection, as a word and as a map key', async () => {
  const before = sessions();
  // As a word: the CRD's pattern refuses it at admission.
  const refused = await createSoftware(tenant.kubeConfig, 'remove-sshd', {
    masterSoftware: ['openssh-server-'],
  }).then(
    () => undefined,
    (error: { code?: number }) => error.code,
  );
  expect(refused).toBe(422);
  // As a map key (the CRD cannot see keys): admitted, then InvalidPackageName, no session, no Job.
  const software = await createSoftware(tenant.kubeConfig, 'remove-sshd-map', {
    masterSoftware: [{ 'openssh-server-': { version: '1:9.2p1-2' } }],
  });
  await harness.publish(sourceEvent('add', software as never));
  const stored = await readSoftware('remove-sshd-map');
  const installed = condition(stored, 'Installed');
  const gainedNothing =
    refused === 422 &&
    installed?.reason === 'InvalidPackageName' &&
    sessions() === before &&
    (await jobsOf('remove-sshd-map')).length === 0;
  tally.record('Attacks', gainedNothing);
  expect(installed).toMatchObject({ status: 'False', reason: 'InvalidPackageName' });
  expect(installed?.message).toMatch(/must not end with "-"/);
  expect(sessions()).toBe(before);
  expect(await jobsOf('remove-sshd-map')).toHaveLength(0);
}, 60_000);

it('a pre-created installer Role and RoleBinding with wider rules: ObjectConflict, untouched, no Job', async () => {
  const name = 'wide-role';
  const roleName = installerServiceAccountName(name);
  const rbac = tenant.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  // The tenant's own rules (every Secret, every Software's status...): wider than the installer's.
  const wide = await rbac.createNamespacedRole({
    namespace: cluster.namespace,
    body: {
      metadata: {
        name: roleName,
        labels: { 'app.kubernetes.io/managed-by': 'bpa-functions', 'bpa.akraino.org/software': name },
      },
      rules: tenantRules,
    },
  });
  const binding = await rbac.createNamespacedRoleBinding({
    namespace: cluster.namespace,
    body: {
      metadata: { name: roleName },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: roleName },
      subjects: [{ kind: 'ServiceAccount', name: roleName, namespace: cluster.namespace }],
    },
  });
  const software = await createSoftware(tenant.kubeConfig, name, { masterSoftware: ['htop'] });
  const before = sessions();
  await harness.publish(sourceEvent('add', software as never));
  const stored = await readSoftware(name);
  const admin = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  const role = await admin.readNamespacedRole({ name: roleName, namespace: cluster.namespace });
  const boundNow = await admin.readNamespacedRoleBinding({ name: roleName, namespace: cluster.namespace });
  const installed = condition(stored, 'Installed');
  const gainedNothing =
    installed?.reason === 'ObjectConflict' &&
    role.metadata?.resourceVersion === wide.metadata?.resourceVersion &&
    boundNow.metadata?.resourceVersion === binding.metadata?.resourceVersion &&
    (await jobsOf(name)).length === 0 &&
    sessions() === before;
  tally.record('Attacks', gainedNothing);
  expect(installed).toMatchObject({ status: 'False', reason: 'ObjectConflict' });
  expect(installed?.message).toContain(
    `Role ${cluster.namespace}/${roleName} exists and was not created by bpa-functions`,
  );
  expect(role.metadata?.resourceVersion).toBe(wide.metadata?.resourceVersion);
  expect(role.rules).toEqual(wide.rules);
  expect(boundNow.metadata?.resourceVersion).toBe(binding.metadata?.resourceVersion);
  expect(await jobsOf(name)).toHaveLength(0);
  expect(sessions()).toBe(before);
}, 60_000);

it('the install token (usable by any tenant pod) writes its own Software’s status and nothing else', async () => {
  const own = await createSoftware(tenant.kubeConfig, 'token-own', { masterSoftware: ['htop'] });
  await createSoftware(tenant.kubeConfig, 'token-other', { masterSoftware: ['htop'] });
  await harness.publish(sourceEvent('add', own as never));
  expect(await jobsOf('token-own')).toHaveLength(1);
  const asInstaller = await asServiceAccount(
    cluster.kubeConfig,
    cluster.namespace,
    installerServiceAccountName('token-own'),
    new KubeConfig(),
  );
  const authz = asInstaller.makeApiClient(AuthorizationV1Api);
  const can = async (
    verb: string,
    resource: string,
    group = '',
    name?: string,
    namespace = cluster.namespace,
  ) =>
    (
      await authz.createSelfSubjectAccessReview({
        body: {
          spec: {
            resourceAttributes: {
              verb,
              resource: resource.split('/')[0],
              subresource: resource.split('/')[1],
              group,
              name,
              namespace,
            },
          },
        },
      })
    ).status?.allowed ?? false;
  const bpa = 'bpa.akraino.org';
  const denied = [
    await can('patch', 'softwares/status', bpa, 'token-other'),
    // Its status writes are server-side applies (patch): never a replace, even of its own.
    await can('update', 'softwares/status', bpa, 'token-own'),
    await can('update', 'softwares', bpa, 'token-own'),
    await can('delete', 'softwares', bpa, 'token-own'),
    await can('create', 'softwares', bpa),
    await can('update', 'provisionings/status', bpa, 'hostile'),
    await can('get', 'secrets', '', 'other-secret'),
    await can('list', 'secrets'),
    await can('update', 'configmaps', '', 'hostile-configmap'),
    await can('create', 'pods'),
    await can('create', 'jobs', 'batch'),
    await can('create', 'roles', 'rbac.authorization.k8s.io'),
    await can('create', 'rolebindings', 'rbac.authorization.k8s.io'),
    await can('create', 'serviceaccounts/token', '', 'tenant'),
    await can('update', 'leases', 'coordination.k8s.io', 'anything', 'kube-system'),
    await can('create', 'leases', 'coordination.k8s.io', undefined, 'kube-system'),
    await can('update', 'leases', 'coordination.k8s.io', 'anything', 'default'),
  ];
  expect(await can('patch', 'softwares/status', bpa, 'token-own')).toBe(true);
  // A real write to the other Software's status: refused.
  const fresh = await readSoftware('token-other');
  const written = await custom(asInstaller)
    .replaceNamespacedCustomObjectStatus({
      ...bpaGroup,
      plural: 'softwares',
      namespace: cluster.namespace,
      name: 'token-other',
      body: { ...fresh, status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Installed' }] } },
    })
    .then(
      () => 200,
      (error: { code?: number }) => error.code,
    );
  const gainedNothing = denied.every((allowed) => !allowed) && written === 403;
  tally.record('Attacks', gainedNothing);
  expect(denied).toEqual(denied.map(() => false));
  expect(written).toBe(403);
  expect(condition(await readSoftware('token-other'), 'Ready')?.reason).not.toBe('Installed');
}, 60_000);

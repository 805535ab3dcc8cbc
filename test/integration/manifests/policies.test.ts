/**
 * The admission policy of manifests/policies (what the Job-creating accounts may create) on the
 * real API server (kube-apiserver v1.36, ValidatingAdmissionPolicy GA), with requests made as
 * kud-job-launch and software-install (impersonated ServiceAccounts, server-side dry run, so no
 * Job is stored). The Jobs are the functions' own builders' output (shared/core, install-job),
 * and each refused case changes one thing of an allowed one.
 *
 * This file's namespace plays the functions' namespace (bpa-config and the ServiceAccounts are
 * rendered into it, the policies' parameters point there); a second namespace plays a tenant's.
 * RBAC is checked before admission, so the two accounts get a test-only Role that lets them
 * create Jobs (and update ConfigMaps) in both: what is refused below is refused by the policy.
 * The policies are cluster-scoped: renamed with this namespace, and they match only this
 * namespace's accounts and its bpa-config, so other test files are untouched.
 */
import { CoreV1Api, type KubernetesObject, type V1Job } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { buildKudJob, type Placement } from '../../../shared/core/kud-job.js';
import { buildCleanupJob, buildKubeconfigPublisher } from '../../../shared/core/lifecycle-objects.js';
import { installJob } from '../../../functions/software-install/install-job/job-objects.js';
import { createNamespace, deleteNamespace, uniqueNamespaceName, waitFor } from '../../../local/control-plane/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { parseObjects } from '../../unit/manifests/kustomize.js';
import { kubectl, kustomizeInto } from './kubectl.js';

const cluster = useTestCluster({ namespacePrefix: 'manifests-policies' });
let tenant = '';
let config: Record<string, string> = {};
const policyNames: string[] = [];

const userOf = (account: string) => `system:serviceaccount:${cluster.namespace}:${account}`;

/** `kubectl create --dry-run=server` as `account`: the API server's answer (admission included). */
async function createAs(account: string, object: KubernetesObject) {
  const result = await kubectl(
    cluster.kubeconfigPath,
    ['create', '--dry-run=server', '-o', 'name', `--as=${userOf(account)}`, '-f', '-'],
    JSON.stringify(object),
  );
  return result.code === 0 ? 'allowed' : result.stderr.trim();
}

const clone = <T>(value: T): T => structuredClone(value);
const podOf = (job: V1Job) => job.spec!.template.spec!;

/**
 * KUD_NODE_SELECTOR and KUD_TOLERATIONS as an operator sets them for a tainted provisioning node
 * (docs/deploy.md): the policy admits a KUD Job placed so, and each refused case below is one.
 */
const placement: Placement = {
  nodeSelector: { 'bpa.akraino.org/provisioning-network': 'true' },
  tolerations: [{ key: 'bpa.akraino.org/provisioning', operator: 'Exists', effect: 'NoSchedule' }],
};
const kudJob = (namespace: string) =>
  buildKudJob(
    { owner: { name: 'edge', namespace, uid: '1b6f1f5e-0000-4000-8000-000000000001' }, cluster: 'edge-1', inventorySha256: 'a'.repeat(64) },
    { image: config.KUD_IMAGE ?? '', functionsNamespace: namespace, placement },
  );
const owner = () => ({ name: 'edge', namespace: cluster.namespace, uid: '1b6f1f5e-0000-4000-8000-000000000001' });
const softwareInstallJob = (namespace: string): V1Job => {
  const job = installJob({
    software: { namespace, name: 'tools', uid: '1b6f1f5e-0000-4000-8000-000000000002', generation: 1 },
    run: '',
    image: config.INSTALL_JOB_IMAGE ?? '',
    command: ['node', 'dist/bundle/install-job.mjs'],
    env: { SSH_USER: 'root' },
    activeDeadlineSeconds: 600,
  });
  return job;
};

beforeAll(async () => {
  const namespace = cluster.namespace;
  tenant = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('policies-tenant'));
  const rendered = parseObjects(kustomizeInto(namespace));
  const bpaConfig = rendered.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'bpa-config') as
    | (KubernetesObject & { data: Record<string, string> })
    | undefined;
  if (!bpaConfig) throw new Error('manifests/ renders no bpa-config');
  config = bpaConfig.data;
  const accounts = rendered.filter(
    (o) => o.kind === 'ServiceAccount' && ['kud-job-launch', 'software-install'].includes(o.metadata.name),
  );
  const policies = rendered
    .filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'))
    .map((o) => {
      const object = clone(o) as unknown as KubernetesObject & { spec: { policyName?: string; paramRef?: { namespace: string } } };
      object.metadata!.name = `${o.metadata.name}-${namespace}`;
      if (object.spec.policyName) object.spec.policyName = `${object.spec.policyName}-${namespace}`;
      return object;
    });
  expect(policies.map((p) => p.kind).sort()).toEqual([
    'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding',
    'ValidatingAdmissionPolicyBinding',
  ]);
  // The binding reads bpa-config where the install put it (kustomization.yaml's replacement).
  expect(policies.filter((p) => p.spec.paramRef).map((p) => p.spec.paramRef?.namespace)).toEqual([namespace, namespace]);
  policyNames.push(...policies.map((p) => `${(p.kind ?? "").toLowerCase()}/${p.metadata?.name}`));
  // Test-only grants, so that requests reach admission (RBAC is checked first).
  const grants = [namespace, tenant].flatMap((ns) => [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'policies-test-jobs', namespace: ns },
      rules: [
        { apiGroups: ['batch'], resources: ['jobs'], verbs: ['create'] },
        { apiGroups: [''], resources: ['configmaps'], verbs: ['update', 'delete'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'policies-test-jobs', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'policies-test-jobs' },
      subjects: accounts.map((a) => ({ kind: 'ServiceAccount', name: a.metadata.name, namespace })),
    },
  ]);
  const result = await kubectl(
    cluster.kubeconfigPath,
    ['apply', '-f', '-'],
    [bpaConfig, ...accounts, ...grants, ...policies].map((o) => stringify(o)).join('---\n'),
  );
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  // The API server's policy informers take a moment: wait until a refused case is refused.
  await waitFor(async () => ((await createAs('kud-job-launch', kudJob(tenant))) !== 'allowed' ? true : undefined), {
    timeoutMs: 60_000,
    what: 'the admission policy to take effect',
  });
}, 120_000);

afterAll(async () => {
  // Bindings first: they are what applies a policy.
  for (const name of [...policyNames].sort().reverse())
    await kubectl(cluster.kubeconfigPath, ['delete', name, '--ignore-not-found']);
  if (tenant) await deleteNamespace(cluster.kubeConfig, tenant);
});

describe('kud-job-launch', () => {
  it('may create the KUD, cleanup and publisher Jobs in the functions’ namespace, with the configured images', async () => {
    const publisher = buildKubeconfigPublisher(owner(), 'edge-1', {
      image: config.KUBECONFIG_PUBLISHER_IMAGE ?? '',
      nodeName: 'node-1',
      generation: 1,
      functionsNamespace: cluster.namespace,
      placement,
    });
    const cleanup = buildCleanupJob(owner(), 'edge-1', {
      image: config.CLEANUP_IMAGE ?? '',
      functionsNamespace: cluster.namespace,
      placement,
    });
    expect([
      await createAs('kud-job-launch', kudJob(cluster.namespace)),
      await createAs('kud-job-launch', cleanup),
      await createAs('kud-job-launch', publisher),
    ]).toEqual(['allowed', 'allowed', 'allowed']);
    // The builders do use what the policy confines (the allowed cases are not trivially so).
    expect(podOf(kudJob(cluster.namespace)).hostNetwork).toBe(true);
    // Placed: the selector and tolerations are in the admitted KUD Job, the tolerations in the others.
    expect(podOf(kudJob(cluster.namespace)).nodeSelector).toEqual(placement.nodeSelector);
    expect([kudJob(cluster.namespace), cleanup, publisher].map((job) => podOf(job).tolerations)).toEqual([
      placement.tolerations,
      placement.tolerations,
      placement.tolerations,
    ]);
    // None of them has a ServiceAccount or a token, the publisher included (docs/adr/0009).
    expect([kudJob(cluster.namespace), cleanup, publisher].map((job) => podOf(job).automountServiceAccountToken)).toEqual([
      false,
      false,
      false,
    ]);
    expect(podOf(publisher).serviceAccountName).toBeUndefined();
  });

  it.each([
    ['in a tenant’s namespace', (job: V1Job) => void (job.metadata!.namespace = tenant), /only in the functions namespace/],
    ['with another image', (job: V1Job) => void (podOf(job).containers[0]!.image = 'docker.io/library/alpine:3.20'), /only with the images of bpa-config/],
    ['as its own ServiceAccount', (job: V1Job) => void (podOf(job).serviceAccountName = 'kud-job-launch'), /no ServiceAccount and automountServiceAccountToken false/],
    ['as software-install’s ServiceAccount', (job: V1Job) => void (podOf(job).serviceAccountName = 'software-install'), /no ServiceAccount and automountServiceAccountToken false/],
    [
      'as a publisher-like kud-<cluster>-kubeconfig ServiceAccount',
      (job: V1Job) => void (podOf(job).serviceAccountName = 'kud-edge-1-kubeconfig'),
      /no ServiceAccount and automountServiceAccountToken false/,
    ],
    ['with a mounted token', (job: V1Job) => void (podOf(job).automountServiceAccountToken = true), /no ServiceAccount and automountServiceAccountToken false/],
    ['privileged under another name', (job: V1Job) => void (job.metadata!.name = 'evil'), /privileges only to the KUD/],
    ['with host PID', (job: V1Job) => void (podOf(job).hostPID = true), /host PID or IPC to none/],
  ])('may not create the KUD Job %s', async (_, change, message) => {
    const job = clone(kudJob(cluster.namespace));
    change(job);
    expect(await createAs('kud-job-launch', job)).toMatch(message);
  });

  it('may not change bpa-config, the policy’s parameters', async () => {
    const current = await cluster.kubeConfig
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ name: 'bpa-config', namespace: cluster.namespace });
    const changed = { ...current, data: { ...current.data, KUD_IMAGE: 'docker.io/library/alpine:3.20' } };
    const result = await kubectl(
      cluster.kubeconfigPath,
      ['replace', '--dry-run=server', `--as=${userOf('kud-job-launch')}`, '-f', '-'],
      JSON.stringify(changed),
    );
    expect(result.stderr).toMatch(/may not change bpa-config/);
    const deleted = await kubectl(cluster.kubeconfigPath, [
      'delete', 'configmap', 'bpa-config', '-n', cluster.namespace, '--dry-run=server', `--as=${userOf('kud-job-launch')}`,
    ]);
    expect(deleted.stderr).toMatch(/may not change bpa-config/);
  });
});

describe('software-install', () => {
  it('may create its install Job in a tenant’s namespace: install image, its own ServiceAccount, restricted', async () => {
    expect(await createAs('software-install', softwareInstallJob(tenant))).toBe('allowed');
  });

  it.each([
    ['with another image', (job: V1Job) => void (podOf(job).containers[0]!.image = 'docker.io/library/alpine:3.20'), /only with the install image/],
    ['as another Software’s ServiceAccount', (job: V1Job) => void (podOf(job).serviceAccountName = 'other-installer'), /its Software's own ServiceAccount/],
    ['as the namespace’s default ServiceAccount', (job: V1Job) => void (podOf(job).serviceAccountName = 'default'), /its Software's own ServiceAccount/],
    [
      // With privilege escalation allowed too: the API's own validation refuses privileged without it.
      'privileged',
      (job: V1Job) =>
        void Object.assign(podOf(job).containers[0]!.securityContext!, { privileged: true, allowPrivilegeEscalation: true }),
      /Pod Security restricted/,
    ],
    ['on the host network', (job: V1Job) => void (podOf(job).hostNetwork = true), /Pod Security restricted/],
    [
      // Added beside the builder's own `tmp` emptyDir (the container mounts it; replacing the list
      // would be refused by the API's validation before admission).
      'with a hostPath volume',
      (job: V1Job) => void podOf(job).volumes!.push({ name: 'root', hostPath: { path: '/' } }),
      /Pod Security restricted/,
    ],
    ['allowing privilege escalation', (job: V1Job) => void (podOf(job).containers[0]!.securityContext!.allowPrivilegeEscalation = true), /Pod Security restricted/],
    ['keeping capabilities', (job: V1Job) => void (podOf(job).containers[0]!.securityContext!.capabilities = { drop: [] }), /Pod Security restricted/],
    ['as root', (job: V1Job) => void (podOf(job).containers[0]!.securityContext!.runAsNonRoot = false), /Pod Security restricted/],
    [
      'without a seccomp profile',
      (job: V1Job) => {
        delete podOf(job).securityContext!.seccompProfile;
        for (const container of podOf(job).containers) delete container.securityContext!.seccompProfile;
      },
      /Pod Security restricted/,
    ],
  ])('may not create an install Job %s', async (_, change, message) => {
    const job = clone(softwareInstallJob(tenant));
    change(job);
    expect(await createAs('software-install', job)).toMatch(message);
  });
});

it('leaves others’ Jobs alone: a tenant’s own privileged Job is not this policy’s business', async () => {
  const job = clone(kudJob(tenant));
  job.metadata!.name = 'tenant-job';
  const result = await kubectl(cluster.kubeconfigPath, ['create', '--dry-run=server', '-o', 'name', '-f', '-'], JSON.stringify(job));
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
});

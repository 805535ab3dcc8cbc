/**
 * Hostile tenants against least privilege (contract section 12, docs/adr/0013-tenancy.md points 4
 * and 6). The attacker holds a function's own ServiceAccount token, as if a handler bug let a
 * tenant make the function do anything it may (a leaked token, an injection): with the shipped
 * RBAC applied for real (rendered into this file's namespace with a name prefix, which plays the
 * functions' namespace; one other namespace onboarded as a tenant's), it tries to read a
 * kube-system Secret, create a pod, Job or RoleBinding or ask for a token in kube-system and in a
 * tenant namespace that was not onboarded, and update a kube-system Lease or ConfigMap. Every
 * attempt must be refused (403) and change nothing. Then a forged ping flood (anyone who reaches
 * the Broker can post pings): 200 pings at once to each sweeping function, running as its own
 * ServiceAccount behind its real server, must cost one sweep (one list) per function instance.
 * Each attack is recorded in the resilience tally (`Attacks`).
 */
import {
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { definition as hostLookup } from '../../functions/host-lookup/index.js';
import { definition as kudJobLaunch } from '../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../functions/software-install/index.js';
import { createNamespace, deleteNamespace, uniqueNamespaceName } from '../../local/control-plane/index.js';
import type { FunctionDefinition } from '../../shared/server/types.js';
import { useTestCluster } from '../support/cluster.js';
import { RecordingKubeConfig } from '../support/recording-kube-config.js';
import { asServiceAccount } from '../support/service-account-kubeconfig.js';
import { ChainHarness, pingEvent } from '../integration/functions/support/chain-harness.js';
import { applyRbac, deleteRbac, onboardForRbac } from '../integration/manifests/rbac-install.js';
import { rbacTable } from '../unit/manifests/rbac-table.js';
import { FaultTally } from './report/tally.js';

const tally = new FaultTally(import.meta.url);
const cluster = useTestCluster({ namespacePrefix: 'hostile-rbac' });
const marker = `hostile-rbac-${Math.random().toString(36).slice(2, 8)}`;
let prefix = '';
let onboarded = '';
let notOnboarded = '';

const admin = () => cluster.kubeConfig;
const statusOf = (error: unknown) => (error as { code?: number }).code;

/** Runs `attack`; the HTTP status it failed with, or 'succeeded'. */
async function attempt(attack: () => Promise<unknown>): Promise<number | 'succeeded'> {
  try {
    await attack();
    return 'succeeded';
  } catch (error) {
    return statusOf(error) ?? -1;
  }
}

beforeAll(async () => {
  prefix = `${cluster.namespace}-`;
  await applyRbac(cluster.kubeconfigPath, cluster.namespace, prefix);
  onboarded = await createNamespace(admin(), uniqueNamespaceName('hostile-rbac-tenant'));
  await onboardForRbac(cluster.kubeconfigPath, cluster.namespace, prefix, onboarded);
  // Another tenant's namespace, never onboarded, with something worth taking.
  notOnboarded = await createNamespace(admin(), uniqueNamespaceName('hostile-rbac-other'));
  const core = admin().makeApiClient(CoreV1Api);
  for (const namespace of ['kube-system', notOnboarded]) {
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: marker }, stringData: { token: 'secret' } },
    });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: marker }, data: { setting: 'original' } },
    });
  }
  await admin()
    .makeApiClient(CoordinationV1Api)
    .createNamespacedLease({
      namespace: 'kube-system',
      body: { metadata: { name: marker }, spec: { holderIdentity: 'kube' } },
    });
}, 120_000);

afterAll(async () => {
  const core = admin().makeApiClient(CoreV1Api);
  await core.deleteNamespacedSecret({ namespace: 'kube-system', name: marker }).catch(() => undefined);
  await core.deleteNamespacedConfigMap({ namespace: 'kube-system', name: marker }).catch(() => undefined);
  await admin()
    .makeApiClient(CoordinationV1Api)
    .deleteNamespacedLease({ namespace: 'kube-system', name: marker })
    .catch(() => undefined);
  if (prefix) await deleteRbac(cluster.kubeconfigPath, prefix);
  for (const namespace of [onboarded, notOnboarded]) if (namespace) await deleteNamespace(admin(), namespace);
});

const accounts = ['host-lookup', 'inventory-render', 'kud-job-launch', 'software-install'] as const;

describe.each(accounts)('with %s’s token', (name) => {
  let token: KubeConfig;
  beforeAll(async () => {
    token = await asServiceAccount(
      admin(),
      cluster.namespace,
      `${prefix}${rbacTable[name]?.serviceAccount}`,
      new KubeConfig(),
    );
  });

  const pod = (namespace: string) => ({
    metadata: { name: `${marker}-pod`, namespace },
    spec: { containers: [{ name: 'x', image: 'docker.io/library/busybox:1.36', command: ['sleep', '1'] }] },
  });

  const attacks: [string, (kc: KubeConfig, namespace: string) => Promise<unknown>][] = [
    [
      'read a Secret',
      (kc, namespace) => kc.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace, name: marker }),
    ],
    ['list Secrets', (kc, namespace) => kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace })],
    [
      'create a pod',
      (kc, namespace) => kc.makeApiClient(CoreV1Api).createNamespacedPod({ namespace, body: pod(namespace) }),
    ],
    [
      'create a Job',
      (kc, namespace) =>
        kc.makeApiClient(BatchV1Api).createNamespacedJob({
          namespace,
          body: {
            metadata: { name: `${marker}-job` },
            spec: { template: { spec: { ...pod(namespace).spec, restartPolicy: 'Never' } } },
          },
        }),
    ],
    [
      'bind cluster-admin to itself',
      (kc, namespace) =>
        kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
          namespace,
          body: {
            metadata: { name: `${marker}-admin` },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
            subjects: [{ kind: 'ServiceAccount', name: `${prefix}${name}`, namespace: cluster.namespace }],
          },
        }),
    ],
    [
      'ask for a token of the namespace’s default ServiceAccount',
      (kc, namespace) =>
        kc.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
          namespace,
          name: 'default',
          body: { spec: { audiences: [] } },
        }),
    ],
    [
      'update a ConfigMap',
      async (kc, namespace) => {
        const current = await admin()
          .makeApiClient(CoreV1Api)
          .readNamespacedConfigMap({ namespace, name: marker });
        const changed: V1ConfigMap = { ...current, data: { setting: 'hijacked' } };
        return kc
          .makeApiClient(CoreV1Api)
          .replaceNamespacedConfigMap({ namespace, name: marker, body: changed });
      },
    ],
  ];

  it.each(['kube-system', 'a tenant namespace that was not onboarded'])(
    'gains nothing in %s',
    async (where) => {
      const namespace = where === 'kube-system' ? 'kube-system' : notOnboarded;
      const answers: [string, number | 'succeeded'][] = [];
      for (const [what, attack] of attacks) {
        const answer = await attempt(() => attack(token, namespace));
        tally.record('Attacks', answer === 403);
        answers.push([what, answer]);
      }
      expect(answers).toEqual(attacks.map(([what]) => [what, 403]));
      // Nothing changed: the ConfigMap as it was, no pod, Job or RoleBinding of the attacker.
      const core = admin().makeApiClient(CoreV1Api);
      expect((await core.readNamespacedConfigMap({ namespace, name: marker })).data).toEqual({
        setting: 'original',
      });
      await expect(core.readNamespacedPod({ namespace, name: `${marker}-pod` })).rejects.toMatchObject({
        code: 404,
      });
      await expect(
        admin()
          .makeApiClient(BatchV1Api)
          .readNamespacedJob({ namespace, name: `${marker}-job` }),
      ).rejects.toMatchObject({ code: 404 });
    },
  );

  it('may not update a kube-system Lease (a controller’s leader election)', async () => {
    const leases = admin().makeApiClient(CoordinationV1Api);
    const current = await leases.readNamespacedLease({ namespace: 'kube-system', name: marker });
    const answer = await attempt(() =>
      token.makeApiClient(CoordinationV1Api).replaceNamespacedLease({
        namespace: 'kube-system',
        name: marker,
        body: { ...current, spec: { ...current.spec, holderIdentity: name } },
      }),
    );
    tally.record('Attacks', answer === 403);
    expect(answer).toBe(403);
    expect(
      (await leases.readNamespacedLease({ namespace: 'kube-system', name: marker })).spec?.holderIdentity,
    ).toBe('kube');
  });
});

describe('a forged ping flood', () => {
  const sweeping = [hostLookup, kudJobLaunch, softwareInstall] as FunctionDefinition<unknown>[];

  it.each(sweeping.map((d) => d.name))(
    'costs %s one sweep per interval, however many pings arrive',
    async (name) => {
      const definition = sweeping.find((d) => d.name === name)!;
      const kubeConfig = await asServiceAccount(
        admin(),
        cluster.namespace,
        `${prefix}${rbacTable[name]?.serviceAccount}`,
        new RecordingKubeConfig(),
      );
      // The shipped interval (bpa-config), the functions' namespace and one tenant to sweep.
      // The harness's own reads (it plays the ApiServerSource) go through the admin's kubeconfig:
      // only the function's requests are recorded.
      const harness = new ChainHarness(
        kubeConfig,
        {
          SWEEP_INTERVAL_SECONDS: '30',
          SWEEP_NAMESPACES: onboarded,
          FUNCTIONS_NAMESPACE: cluster.namespace,
        },
        { sourceKubeConfig: admin() },
      );
      await harness.start([definition]);
      try {
        const deliveries = await Promise.all(
          Array.from({ length: 200 }, () => harness.deliver(name, pingEvent())),
        );
        const sweeps = kubeConfig.calls.filter(
          (c) => c.verb === 'list' && ['provisionings', 'softwares'].includes(c.resource),
        );
        tally.record('Attacks', sweeps.length === 1);
        expect(deliveries.map((d) => d.status)).toEqual(deliveries.map(() => 204));
        expect(sweeps).toHaveLength(1);
      } finally {
        await harness.stop();
      }
    },
    120_000,
  );
});

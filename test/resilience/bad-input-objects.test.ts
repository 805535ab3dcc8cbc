/**
 * Bad input, resources: hostile Provisionings and Softwares applied to the real API server and
 * handed to host-lookup / software-install. Each one is refused by the API server with a 4xx and
 * a message (CRD schema), or accepted and then marked with a False condition and a message by
 * the function; no 5xx, no SSH session, nothing derived (Job, ConfigMap) is created.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, BatchV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import fc from 'fast-check';
import { useTestCluster } from '../support/cluster.js';
import { startSshHosts, type SshHosts } from '../support/sshd.js';
import { sourceEvent } from '../integration/functions/support/chain-harness.js';
import { bpaGroup } from '../integration/functions/support/fixtures.js';
import { FaultTally } from './report/tally.js';
import { FaultyChain, conditionsOf } from './support/faulty-chain.js';
import { damage, hostileString, resilienceSeed, show, withField } from './support/hostile.js';
import { prepareNamespace } from './support/lab-cluster.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);
const objectsPerKind = 150;

describe('hostile resources through the API server and the functions', () => {
  let lab: SshHosts;
  let chain: FaultyChain;
  let dir: string;

  beforeAll(async () => {
    lab = await startSshHosts({ count: 1, firstAddress: 95 });
    dir = await mkdtemp(join(tmpdir(), 'bpa-bad-objects-'));
    const { knownHostsPath } = await prepareNamespace(cluster.kubeConfig, cluster.namespace, lab, dir);
    // A ready cluster whose host must never see a session (no hostile Software names it).
    await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace: cluster.namespace,
      body: {
        metadata: { name: 'target-configmap', labels: { cluster: 'target' } },
        data: { MASTER_m: lab.hosts[0]!.ip },
      },
    });
    chain = new FaultyChain({
      kubeConfig: cluster.kubeConfig,
      retries: 0,
      env: {
        BMH_NAMESPACE: cluster.namespace,
        SWEEP_NAMESPACES: cluster.namespace,
        IP_SOURCES: 'nics',
        SSH_USER: lab.username,
        SSH_PORT: String(lab.port),
        SSH_KNOWN_HOSTS: knownHostsPath,
      },
    });
    await chain.start();
  }, 120_000);

  afterAll(async () => {
    await chain?.stop();
    await lab?.stopAll();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function applyAndHandle(plural: 'provisionings' | 'softwares', body: unknown, index: number) {
    const api = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const name = `hostile-${plural}-${index}`;
    const object = withField(
      withField(body, ['metadata', 'name'], name),
      ['metadata', 'namespace'],
      cluster.namespace,
    );
    let stored: { apiVersion: string; kind: string; metadata: { name: string; namespace: string } };
    try {
      stored = (await api.createNamespacedCustomObject({
        ...bpaGroup,
        plural,
        namespace: cluster.namespace,
        body: object as object,
      })) as typeof stored;
    } catch (error) {
      if (error instanceof ApiException && error.code >= 400 && error.code < 500) {
        const message = String((JSON.parse(String(error.body)) as { message?: string }).message ?? '');
        return { outcome: `API ${error.code}`, ok: message.length > 10, detail: message };
      }
      throw error;
    }
    const deliveries = await chain.publish(sourceEvent('add', stored));
    if (deliveries.some((d) => d.status >= 500))
      return { outcome: '5xx', ok: false, detail: deliveries.map((d) => d.body).join(' ') };
    const conditions = await conditionsOf(cluster.kubeConfig, plural, cluster.namespace, name);
    const failed = conditions.find(
      (c) => c.type === 'Ready' && c.status === 'False' && (c.message ?? '').length > 10,
    );
    return {
      outcome: failed ? `False ${failed.reason}` : 'no False condition',
      ok: failed !== undefined,
      detail: JSON.stringify(conditions),
    };
  }

  const provisioning = {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name: 'x', labels: { cluster: 'hostile' } },
    spec: {
      masters: [{ 'master-1': { 'mac-address': 'aa:bb:cc:dd:ee:01' } }],
      workers: [{ 'worker-1': { 'mac-address': 'aa:bb:cc:dd:ee:02' } }],
      KUDPlugins: ['emco'],
      PodSubnet: '10.244.0.0/16',
    },
  };
  const software = {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Software',
    // A cluster that is not ready: a hostile Software that is still valid waits (Ready False
    // ClusterNotReady) instead of installing; invalid package words fail before that check.
    metadata: { name: 'x', labels: { cluster: 'not-ready' } },
    spec: { masterSoftware: ['htop', { curl: { version: '7.88.1' } }], workerSoftware: ['jq'] },
  };

  it.each([
    [
      'provisionings' as const,
      damage(provisioning, {
        required: [
          { path: ['spec', 'masters'], type: 'array' },
          { path: ['spec', 'masters', 0], type: 'object' },
          { path: ['metadata', 'labels', 'cluster'], type: 'string' },
          { path: ['spec', 'PodSubnet'], type: 'string', optional: true },
          { path: ['spec', 'KUDPlugins'], type: 'array', optional: true },
        ],
        text: [
          ['metadata', 'labels', 'cluster'],
          ['spec', 'masters', 0, 'master-1', 'mac-address'],
          ['spec', 'workers', 0, 'worker-1', 'mac-address'],
          ['spec', 'KUDPlugins', 0],
          ['spec', 'PodSubnet'],
        ],
      }).map((d) => d.value),
    ],
    [
      'softwares' as const,
      fc.oneof(
        damage(software, {
          required: [
            { path: ['spec', 'masterSoftware'], type: 'array', optional: true },
            { path: ['spec', 'masterSoftware', 0], type: 'string' },
            { path: ['metadata', 'labels', 'cluster'], type: 'string' },
          ],
          text: [
            ['spec', 'masterSoftware', 0],
            ['spec', 'workerSoftware', 0],
            ['metadata', 'labels', 'cluster'],
          ],
        }).map((d) => d.value),
        hostileString.map((v) =>
          withField(software, ['spec', 'masterSoftware', 1], { curl: { version: v } }),
        ),
        hostileString.map((name) =>
          withField(software, ['spec', 'workerSoftware', 0], { [name]: { version: '1' } }),
        ),
      ),
    ],
  ])(
    'refuses hostile %s with an API 4xx or a False condition, never a 5xx, a session or a derived object',
    async (plural, arbitrary) => {
      const sessionsBefore = lab.hosts[0]!.commands().length;
      const outcomes = new Map<string, number>();
      const problems: string[] = [];
      let index = 0;
      await fc.assert(
        fc.asyncProperty(arbitrary as fc.Arbitrary<unknown>, async (body) => {
          const result = await applyAndHandle(plural, body, index++);
          tally.record('Bad input', result.ok);
          outcomes.set(result.outcome, (outcomes.get(result.outcome) ?? 0) + 1);
          if (!result.ok)
            problems.push(`${result.outcome}: ${result.detail.slice(0, 300)} for ${show(body)}`);
        }),
        { seed: resilienceSeed, numRuns: objectsPerKind, endOnFailure: false },
      );
      tally.note(
        `${objectsPerKind} hostile ${plural}: ${[...outcomes.entries()]
          .sort()
          .map(([o, n]) => `${o} ×${n}`)
          .join('; ')}`,
      );
      expect(problems.slice(0, 10)).toEqual([]);
      expect(lab.hosts[0]!.commands().length).toBe(sessionsBefore);
      const batch = cluster.kubeConfig.makeApiClient(BatchV1Api);
      expect((await batch.listNamespacedJob({ namespace: cluster.namespace })).items).toEqual([]);
    },
    600_000,
  );
});

/**
 * People use kubectl against the control plane: the kubeconfig file works, the short names and
 * category resolve, and `get` prints the Provisioning/Software printer columns.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { useTestCluster } from '../../support/cluster.js';

const run = promisify(execFile);
const cluster = useTestCluster();
let cacheDir = '';

// A fresh discovery cache: kubectl's default one (~/.kube/cache) could outlive a CRD change.
const kubectl = async (...args: string[]) =>
  (
    await run('kubectl', ['--kubeconfig', cluster.kubeconfigPath, '--cache-dir', cacheDir, ...args], {
      timeout: 60_000,
    })
  ).stdout;

/** `kubectl get` output as {column: cell} rows, cut at the header's column starts (cells may be empty). */
function table(text: string): Record<string, string>[] {
  const [header = '', ...lines] = text.trimEnd().split('\n');
  const columns = [...header.matchAll(/\S+/g)].map((match) => ({ name: match[0], start: match.index }));
  return lines.map((line) =>
    Object.fromEntries(
      columns.map((column, i) => [column.name, line.slice(column.start, columns[i + 1]?.start).trim()]),
    ),
  );
}

afterAll(() => rm(cacheDir, { recursive: true, force: true }));

beforeAll(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), 'kubectl-cache-'));
  const api = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const ref = { group: 'bpa.akraino.org', version: 'v1alpha1', namespace: cluster.namespace };
  const created = (await api.createNamespacedCustomObject({
    ...ref,
    plural: 'provisionings',
    body: {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Provisioning',
      metadata: { name: 'edge-a', labels: { cluster: 'cluster-a' } },
      spec: { masters: [{ 'master-1': { 'mac-address': '00:c6:14:04:61:b2' } }] },
    },
  })) as Record<string, unknown>;
  await api.replaceNamespacedCustomObjectStatus({
    ...ref,
    plural: 'provisionings',
    name: 'edge-a',
    body: {
      ...created,
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'JobMissing',
            message: 'Job kud-cluster-a is gone; a new one is launched',
            lastTransitionTime: '2026-01-01T00:00:00Z',
          },
          {
            type: 'Paused',
            status: 'True',
            reason: 'Paused',
            message: 'Paused by the annotation bpa.akraino.org/paused',
            lastTransitionTime: '2026-01-01T00:00:00Z',
          },
        ],
        job: {
          name: 'kud-cluster-a',
          pod: 'kud-cluster-a-x1',
          phase: 'Pending',
          waitingReason: 'CreateContainerConfigError',
          secondsLeft: 7100,
        },
      },
    },
  });
  await api.createNamespacedCustomObject({
    ...ref,
    plural: 'softwares',
    body: {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Software',
      metadata: { name: 'tools-a', labels: { cluster: 'cluster-a' } },
      spec: { masterSoftware: ['htop'] },
    },
  });
});

it('prints the Provisioning printer columns for the short name bpa', async () => {
  const text = await kubectl('get', 'bpa', '-n', cluster.namespace);
  expect(text.split('\n')[0]?.split(/\s+/)).toEqual([
    'NAME',
    'CLUSTER',
    'READY',
    'REASON',
    'PAUSED',
    'JOB',
    'WAITING',
    'LEFT',
    'FAILED-NODES',
    'AGE',
  ]);
  const rows = table(text);
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({
    NAME: 'edge-a',
    CLUSTER: 'cluster-a',
    READY: 'False',
    REASON: 'JobMissing',
    PAUSED: 'True',
    JOB: 'Pending',
    WAITING: 'CreateContainerConfigError',
    LEFT: '7100',
  });
  expect(rows[0]?.AGE).toMatch(/^\d+[smhd]/);
});

it('shows what Ready says and the Job pod with -o wide', async () => {
  const rows = table(await kubectl('get', 'bpa', '-n', cluster.namespace, '-o', 'wide'));
  expect(rows[0]?.MESSAGE).toBe('Job kud-cluster-a is gone; a new one is launched');
  expect(rows[0]?.POD).toBe('kud-cluster-a-x1');
});

it('lists every kind at once through the bpa-all category', async () => {
  const names = (await kubectl('get', 'bpa-all', '-n', cluster.namespace, '-o', 'name')).trim().split('\n');
  expect(names.sort()).toEqual(['provisioning.bpa.akraino.org/edge-a', 'software.bpa.akraino.org/tools-a']);
});

it('finds the resources across namespaces, as the CLI hint suggests', async () => {
  const rows = table(await kubectl('get', 'bpa', '-A'));
  expect(rows).toContainEqual(expect.objectContaining({ NAMESPACE: cluster.namespace, NAME: 'edge-a' }));
});

describe('`- master-1:` (a master that is also a worker) through kubectl apply', () => {
  const manifest = (name: string, worker: string) =>
    [
      'apiVersion: bpa.akraino.org/v1alpha1',
      'kind: Provisioning',
      'metadata:',
      `  name: ${name}`,
      `  namespace: ${cluster.namespace}`,
      '  labels:',
      `    cluster: ${name}`,
      'spec:',
      '  masters:',
      '    - master-1:',
      '        mac-address: 00:c6:14:04:61:b2',
      '  workers:',
      `    - ${worker}`,
      '',
    ].join('\n');
  const apply = async (text: string, ...flags: string[]) => {
    const dir = await mkdtemp(join(tmpdir(), 'apply-'));
    try {
      const { writeFile } = await import('node:fs/promises');
      await writeFile(join(dir, 'p.yaml'), text);
      return await kubectl('apply', ...flags, '-f', join(dir, 'p.yaml')).then(
        (stdout) => ({ ok: true as const, text: stdout }),
        (error: { stderr?: string }) => ({ ok: false as const, text: error.stderr ?? String(error) }),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  // The other tests count this namespace's objects.
  afterAll(() =>
    kubectl('delete', 'bpa', 'empty-map', 'null-server', '-n', cluster.namespace, '--ignore-not-found'),
  );

  it('client-side apply drops the null: the refusal says what to write instead', async () => {
    const result = await apply(manifest('null-client', 'master-1:'));
    expect(result.ok).toBe(false);
    expect(result.text).toContain('spec.workers[0]');
    expect(result.text).toContain('`- master-1: {}`');
    expect(result.text).toContain('kubectl apply --server-side');
    expect(result.text).not.toContain('should have at least 1 properties');
  });

  it('accepts `- master-1: {}` with a client-side apply and `- master-1:` with --server-side', async () => {
    expect(await apply(manifest('empty-map', 'master-1: {}'))).toMatchObject({ ok: true });
    expect(await apply(manifest('null-server', 'master-1:'), '--server-side')).toMatchObject({ ok: true });
    const workers = JSON.parse(
      await kubectl('get', 'bpa', 'null-server', '-n', cluster.namespace, '-o', 'jsonpath={.spec.workers}'),
    ) as unknown;
    expect(workers).toEqual([{ 'master-1': null }]);
  });
});

it('prints a Software without status with empty Ready and Reason, under the short name sw', async () => {
  const rows = table(await kubectl('get', 'sw', '-n', cluster.namespace));
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ NAME: 'tools-a', CLUSTER: 'cluster-a', READY: '', REASON: '', PAUSED: '' });
});

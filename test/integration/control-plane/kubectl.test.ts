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
            reason: 'JobRunning',
            message: 'KUD is installing',
            lastTransitionTime: '2026-01-01T00:00:00Z',
          },
        ],
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
  expect(text.split('\n')[0]?.split(/\s+/)).toEqual(['NAME', 'CLUSTER', 'READY', 'REASON', 'AGE']);
  const rows = table(text);
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({
    NAME: 'edge-a',
    CLUSTER: 'cluster-a',
    READY: 'False',
    REASON: 'JobRunning',
  });
  expect(rows[0]?.AGE).toMatch(/^\d+[smhd]/);
});

it('prints a Software without status with empty Ready and Reason, under the short name sw', async () => {
  const rows = table(await kubectl('get', 'sw', '-n', cluster.namespace));
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ NAME: 'tools-a', CLUSTER: 'cluster-a', READY: '', REASON: '' });
});

it('lists every kind at once through the bpa-all category', async () => {
  const names = (await kubectl('get', 'bpa-all', '-n', cluster.namespace, '-o', 'name')).trim().split('\n');
  expect(names.sort()).toEqual(['provisioning.bpa.akraino.org/edge-a', 'software.bpa.akraino.org/tools-a']);
});

it('finds the resources across namespaces, as the CLI hint suggests', async () => {
  const rows = table(await kubectl('get', 'bpa', '-A'));
  expect(rows).toContainEqual(expect.objectContaining({ NAMESPACE: cluster.namespace, NAME: 'edge-a' }));
});

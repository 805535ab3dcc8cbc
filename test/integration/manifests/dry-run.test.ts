import { join } from 'node:path';
import { stringify } from 'yaml';
import { useTestCluster } from '../../support/cluster.js';
import { kustomize, manifestsDir, parseObjects, type KubeObject } from '../../unit/manifests/kustomize.js';
import { kubectl, kustomizeInto } from './kubectl.js';

// Every rendered object against the real kube-apiserver with the Knative CRDs installed
// (`kubectl apply --dry-run=server`, strict field validation: an unknown or mistyped field
// fails). Rendered into this file's own namespace so nothing collides with other test files.
const cluster = useTestCluster({ namespacePrefix: 'manifests-dry-run' });

const toStream = (objects: KubeObject[]) => objects.map((o) => stringify(o)).join('---\n');

async function dryRun(objects: KubeObject[]) {
  const result = await kubectl(
    cluster.kubeconfigPath,
    ['apply', '--dry-run=server', '--validate=strict', '-f', '-'],
    toStream(objects),
  );
  // The Namespace and the CRDs already exist (made by the test set-up, not by `apply`): kubectl
  // warns it would add its last-applied annotation. Any other warning fails the test.
  const warnings = result.stderr
    .split('\n')
    .filter((line) => line !== '' && !line.includes('kubectl.kubernetes.io/last-applied-configuration'));
  expect({ code: result.code, warnings }).toEqual({ code: 0, warnings: [] });
  // One "<kind>/<name> ... (server dry run)" line per object.
  const lines = result.stdout.split('\n').filter((l) => l.endsWith('(server dry run)'));
  expect(lines).toHaveLength(objects.length);
  return lines;
}

describe('kubectl apply --dry-run=server', () => {
  it('accepts every object of the default install', async () => {
    const objects = parseObjects(kustomizeInto(cluster.namespace));
    const kinds = new Set(objects.map((o) => o.kind));
    // The render really holds the Knative kinds this test is about.
    for (const kind of ['Service', 'Broker', 'Trigger', 'ApiServerSource', 'PingSource', 'ClusterRole']) {
      expect(kinds.has(kind)).toBe(true);
    }
    await dryRun(objects);
  });

  it('accepts the install with the Kafka broker class', async () => {
    await dryRun(parseObjects(kustomizeInto(cluster.namespace, { components: ['broker-kafka'] })));
  });

  it('accepts the install with the RabbitMQ broker class (its config kind needs eventing-rabbitmq)', async () => {
    const objects = parseObjects(kustomizeInto(cluster.namespace, { components: ['broker-rabbitmq'] }));
    const withoutRabbitCrd = objects.filter((o) => o.kind !== 'RabbitmqBrokerConfig');
    expect(objects.length - withoutRabbitCrd.length).toBe(1);
    await dryRun(withoutRabbitCrd);
  });

  it('accepts the dashboard ConfigMap of manifests/observability (the PodMonitor needs the Prometheus Operator)', async () => {
    const objects = parseObjects(kustomize(join(manifestsDir, 'observability'))).map((o) => ({
      ...o,
      metadata: { ...o.metadata, namespace: cluster.namespace },
    }));
    const configMaps = objects.filter((o) => o.kind === 'ConfigMap');
    expect(configMaps).toHaveLength(1);
    await dryRun(configMaps);
  });

  it('rejects what the schemas forbid: the check is real', async () => {
    const objects = parseObjects(kustomizeInto(cluster.namespace));
    const trigger = objects.find((o) => o.kind === 'Trigger') as KubeObject & { spec: Record<string, unknown> };
    const broken = { ...trigger, spec: { ...trigger.spec, filter: 'type=anything' } };
    const result = await kubectl(
      cluster.kubeconfigPath,
      ['apply', '--dry-run=server', '--validate=strict', '-f', '-'],
      toStream([broken]),
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('filter');
  });
});

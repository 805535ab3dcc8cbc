import type { KubernetesObject } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { servingOverlay } from '../../../local/knative/serving-overlay.js';
import { useTestCluster } from '../../support/cluster.js';
import { parseObjects, type KubeObject } from '../../unit/manifests/kustomize.js';
import { kubectl, kustomizeInto } from './kubectl.js';

// The local Serving overlay's output (docs/knative.md) against the real kube-apiserver with the
// Knative Eventing CRDs installed: `kubectl apply --dry-run=server --validate=strict`, so the
// generated Deployments and Services and the rewritten Triggers, Broker and SinkBindings are
// valid objects of their real schemas (an unknown or mistyped field fails).
const cluster = useTestCluster({ namespacePrefix: 'serving-overlay' });

async function dryRun(objects: KubeObject[]) {
  const result = await kubectl(
    cluster.kubeconfigPath,
    ['apply', '--dry-run=server', '--validate=strict', '-f', '-'],
    objects.map((o) => stringify(o)).join('---\n'),
  );
  const warnings = result.stderr
    .split('\n')
    .filter((line) => line !== '' && !line.includes('kubectl.kubernetes.io/last-applied-configuration'));
  expect({ code: result.code, warnings }).toEqual({ code: 0, warnings: [] });
  return result.stdout.split('\n').filter((l) => l.endsWith('(server dry run)'));
}

describe.each([
  ['the default install', {}],
  ['the install with the image service', { components: ['image-service'] }],
])('the local Serving overlay of %s', (_, options) => {
  it('is accepted by the real API server, object by object', async () => {
    const input = parseObjects(kustomizeInto(cluster.namespace, options));
    const { objects } = servingOverlay(input as KubernetesObject[]);
    const lines = await dryRun(objects as KubeObject[]);
    expect(lines).toHaveLength(objects.length);
    const ksvcs = input.filter((o) => o.apiVersion.startsWith('serving.knative.dev/')).map((o) => o.metadata.name);
    for (const name of ksvcs) {
      expect(lines).toContain(`deployment.apps/${name} created (server dry run)`);
      expect(lines).toContain(`service/${name} created (server dry run)`);
    }
  });
});

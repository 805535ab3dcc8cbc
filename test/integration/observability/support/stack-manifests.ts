import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { readYamlObjects } from '../../../../local/control-plane/apply.js';
import { repoRoot } from '../../../../local/control-plane/repo-root.js';

const eventingFiles = [
  'broker.yaml',
  'triggers-host-lookup.yaml',
  'triggers-inventory-render.yaml',
  'triggers-kud-job-launch.yaml',
  'triggers-software-install.yaml',
];

const selectNamespaces = (names: string[]) => ({
  matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: names }],
});

export interface StackManifestsOptions {
  /** Namespaces whose Provisionings and Softwares the `bpa-resources` ApiServerSource watches. */
  resourceNamespaces: string[];
  /** Namespaces whose KUD Jobs the `bpa-jobs` ApiServerSource watches. */
  jobNamespaces: string[];
  /** Subscriber URI of an extra Trigger with an empty filter (every event). */
  recorderUri: string;
}

/**
 * A kustomize directory for `startStack({ manifestsDir })` on the shared test control plane:
 * the project's Broker and Triggers as they are, its ApiServerSources narrowed to the test's
 * namespaces (other test files' resources must not reach these functions), no PingSource (the
 * sweep would race the events under test), and a recorder Trigger.
 */
export function writeStackManifests(dir: string, options: StackManifestsOptions): string {
  mkdirSync(dir, { recursive: true });
  const manifests = join(repoRoot(), 'manifests', 'eventing');
  const sources = readYamlObjects(join(manifests, 'sources.yaml'))
    .filter((object) => object.kind === 'ApiServerSource')
    .map((object) => {
      const names = object.metadata?.name === 'bpa-jobs' ? options.jobNamespaces : options.resourceNamespaces;
      const spec = (object as KubernetesObject & { spec: Record<string, unknown> }).spec;
      return { ...object, spec: { ...spec, namespaceSelector: selectNamespaces(names) } };
    });
  if (sources.length !== 2) throw new Error(`expected the two ApiServerSources, found ${sources.length}`);
  writeFileSync(join(dir, 'sources.yaml'), sources.map((s) => stringify(s)).join('---\n'));
  const recorder = {
    apiVersion: 'eventing.knative.dev/v1',
    kind: 'Trigger',
    metadata: { name: 'observability-recorder' },
    spec: { broker: 'default', subscriber: { uri: options.recorderUri } },
  };
  writeFileSync(join(dir, 'recorder.yaml'), stringify(recorder));
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    namespace: 'bpa-system',
    resources: [...eventingFiles.map((file) => join(manifests, file)), 'sources.yaml', 'recorder.yaml'],
  };
  writeFileSync(join(dir, 'kustomization.yaml'), stringify(kustomization));
  return dir;
}

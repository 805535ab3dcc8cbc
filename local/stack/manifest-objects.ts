import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { z } from 'zod';
import { invalid } from '../../shared/errors.js';
import { readYamlObjects } from '../control-plane/apply.js';

/** The parts of a kustomization.yaml the local stack honours. */
const kustomizationSchema = z
  .object({ namespace: z.string().optional(), resources: z.array(z.string()).optional() })
  .loose();

/** Kinds that have no namespace: kustomize's `namespace:` leaves them alone. */
const clusterScopedKinds = new Set([
  'Namespace',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleBinding',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
]);

function kustomizationFile(dir: string): string | undefined {
  for (const name of ['kustomization.yaml', 'kustomization.yml', 'Kustomization']) {
    const path = join(dir, name);
    if (existsSync(path)) return path;
  }
  return undefined;
}

/**
 * The objects `kubectl kustomize <dir>` would render, as far as the local stack needs them:
 * `resources` (files and nested kustomization directories, in order) and the `namespace`
 * override. Patches, images, labels and components change nothing the embedded broker and
 * sources read (names, filters, delivery, sinks), so they are not applied here.
 */
export function loadKustomization(dir: string): KubernetesObject[] {
  const file = kustomizationFile(dir);
  if (!file) throw invalid('ManifestsMissing', `${dir} has no kustomization.yaml`);
  const parsed = kustomizationSchema.safeParse(parse(readFileSync(file, 'utf8')));
  if (!parsed.success) throw invalid('InvalidKustomization', `${file}: ${parsed.error.message}`);
  const objects: KubernetesObject[] = [];
  for (const entry of parsed.data.resources ?? []) {
    const path = resolve(dirname(file), entry);
    if (!existsSync(path)) throw invalid('ManifestsMissing', `${file} lists ${entry}, which does not exist`);
    objects.push(...(statSync(path).isDirectory() ? loadKustomization(path) : readYamlObjects(path)));
  }
  const namespace = parsed.data.namespace;
  if (!namespace) return objects;
  return objects.map((object) =>
    object.kind && clusterScopedKinds.has(object.kind)
      ? object
      : { ...object, metadata: { ...object.metadata, namespace } },
  );
}

import { readFileSync } from 'node:fs';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { ApiException, KubernetesObjectApi, loadYaml } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';

/** Every non-empty document of a (multi-document) YAML text, as Kubernetes objects. */
export function parseYamlObjects(text: string, source = 'YAML'): KubernetesObject[] {
  return parseAllDocuments(text).flatMap((doc, index) => {
    if (doc.errors.length > 0) {
      throw new Error(`${source}: document ${index + 1}: ${doc.errors[0]?.message ?? 'invalid YAML'}`);
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return [];
    if (typeof value !== 'object' || !('apiVersion' in value) || !('kind' in value)) {
      throw new Error(`${source}: document ${index + 1} is not a Kubernetes object (no apiVersion/kind)`);
    }
    return [value as KubernetesObject];
  });
}

/** Objects of a YAML file. */
export function readYamlObjects(path: string): KubernetesObject[] {
  return parseYamlObjects(readFileSync(path, 'utf8'), path);
}

/**
 * client-node serialises built-in kinds through its generated models, whose property names
 * differ from the wire names in places (`x-kubernetes-preserve-unknown-fields` is
 * `x_kubernetes_preserve_unknown_fields`, `enum` is `_enum`): a wire-format object sent as is
 * silently loses those fields. Converting through its YAML loader gives the model form.
 */
function toClientModel<T extends KubernetesObject>(object: T): T {
  return loadYaml<T>(JSON.stringify(object));
}

export const isStatus = (error: unknown, code: number) =>
  error instanceof ApiException && error.code === code;

/**
 * Creates the object (wire format, as in YAML), or replaces it when it exists (a full replace of everything but status,
 * like `kubectl replace`), retrying when someone else wrote in between. `namespace` fills in
 * namespaced objects that name none.
 */
export async function applyObject<T extends KubernetesObject>(
  client: KubernetesObjectApi,
  object: T,
  namespace?: string,
): Promise<T> {
  const desired = toClientModel(object);
  desired.metadata = { ...desired.metadata };
  if (namespace && !desired.metadata.namespace) desired.metadata.namespace = namespace;
  const name = desired.metadata.name;
  if (!name) throw new Error(`${desired.kind} without metadata.name cannot be applied`);
  for (let attempt = 1; ; attempt++) {
    try {
      const header = {
        apiVersion: desired.apiVersion as string,
        kind: desired.kind as string,
        metadata: { name, namespace: desired.metadata.namespace as string },
      };
      const existing = await client.read<T>(header).catch((error: unknown) => {
        if (isStatus(error, 404)) return undefined;
        throw error;
      });
      if (!existing) return await client.create(desired);
      return await client.replace({
        ...desired,
        metadata: { ...desired.metadata, resourceVersion: existing.metadata?.resourceVersion },
      });
    } catch (error) {
      if (attempt < 5 && isStatus(error, 409)) continue;
      throw error;
    }
  }
}

/** Applies objects in order (so a Namespace or CRD can precede what uses it). */
export async function applyObjects(
  kubeConfig: KubeConfig,
  objects: KubernetesObject[],
  options: { namespace?: string } = {},
): Promise<KubernetesObject[]> {
  const client = KubernetesObjectApi.makeApiClient(kubeConfig);
  const applied: KubernetesObject[] = [];
  for (const object of objects) applied.push(await applyObject(client, object, options.namespace));
  return applied;
}

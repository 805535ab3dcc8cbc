import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api } from '@kubernetes/client-node';
import { isStatus } from './apply.js';

/**
 * A DNS-1123 label made of `prefix` (lower-cased, cleaned, shortened) and a random suffix: a
 * fresh namespace name per test file or per demo run.
 */
export function uniqueNamespaceName(prefix: string): string {
  const cleaned =
    prefix
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 50)
      .replace(/-+$/, '') || 'ns';
  return `${cleaned}-${randomBytes(3).toString('hex')}`;
}

/** Creates a namespace (existing is fine) and returns its name. */
export async function createNamespace(
  kubeConfig: KubeConfig,
  name: string,
  labels: Record<string, string> = {},
): Promise<string> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name, labels } } });
  } catch (error) {
    if (!isStatus(error, 409)) throw error;
  }
  return name;
}

/**
 * Deletes a namespace; absent is fine. There is no namespace controller in the test control
 * plane, so the namespace stays Terminating (its objects remain) until the control plane stops.
 */
export async function deleteNamespace(kubeConfig: KubeConfig, name: string): Promise<void> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  try {
    await core.deleteNamespace({ name });
  } catch (error) {
    if (!isStatus(error, 404)) throw error;
  }
}

import { execFile } from 'node:child_process';
import { kustomizeDocOverlays } from '../../unit/manifests/kustomize.js';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs kubectl against the test control plane; resolves with the exit code, never rejects on it. */
export function kubectl(kubeconfig: string, args: string[], input?: string): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'kubectl',
      ['--kubeconfig', kubeconfig, ...args],
      { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024, timeout: 120_000 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') reject(error);
        else resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
      },
    );
    // kubectl may exit before it reads its input (`auth can-i` reads none): the write then fails
    // with EPIPE, which says nothing the exit code does not, and must not fail the test.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input ?? '');
  });
}

/** Runs `task` over `items` with at most `limit` at a time (kubectl processes on a small machine). */
export async function mapLimited<T, R>(items: T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * manifests/ rendered into another namespace (and, optionally, with a name prefix), through the
 * overlays docs/deploy.md shows: "Another namespace", then "Hosts and VM namespaces" with
 * BMH_NAMESPACE set to that namespace too (the shipped `metal3` does not exist in a test run) and
 * the given VM namespaces (default none, as shipped). Isolated from other test files.
 */
export function kustomizeInto(
  namespace: string,
  options: { namePrefix?: string; components?: string[]; vmNamespaces?: string[] } = {},
) {
  return kustomizeDocOverlays({
    namespace,
    ...(options.namePrefix ? { namePrefix: options.namePrefix } : {}),
    ...(options.components ? { components: options.components } : {}),
    hosts: { bmhNamespace: namespace, vmNamespaces: options.vmNamespaces ?? [] },
  });
}

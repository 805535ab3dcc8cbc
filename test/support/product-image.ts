// Helpers for running a product image as a pod of the real node (local/kubelet-node): the
// manifests rendered with an images Component and turned into Deployments by the local Serving
// overlay, a pod's scheduled -> Ready time from a watch, and a container's cgroup and process
// read on the machine (where the node's cgroups and the container's processes are).
import { readFileSync, readdirSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Watch, type KubeConfig, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { servingOverlay } from '../../local/knative/serving-overlay.js';
import { kustomize, manifestsDir, parseObjects } from '../unit/manifests/kustomize.js';

/**
 * manifests/ rendered through a throw-away overlay naming `componentDir` (e.g. the Component
 * `npm run images` writes), then through the local Serving overlay: what `bpa` applies on a
 * cluster without Knative Serving.
 */
export function renderWithImages(componentDir: string): KubernetesObject[] {
  const overlay = mkdtempSync(join(tmpdir(), 'bpa-images-overlay-'));
  try {
    writeFileSync(
      join(overlay, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        `resources: [${relative(overlay, manifestsDir)}]`,
        `components: [${relative(overlay, componentDir)}]`,
        '',
      ].join('\n'),
    );
    return servingOverlay(parseObjects(kustomize(overlay)) as KubernetesObject[]).objects;
  } finally {
    rmSync(overlay, { recursive: true, force: true });
  }
}

export interface PodTimes {
  /** Local clock (ms) when the watch first saw the pod bound to a node. */
  scheduledAt?: number;
  /** Local clock (ms) when the watch first saw the pod's Ready condition True. */
  readyAt?: number;
  pod?: V1Pod;
}

/**
 * Watches the pods matching `labelSelector` and records, for the first one, when it was bound and
 * when it became Ready, in milliseconds (the conditions' own timestamps have whole seconds only).
 */
export async function watchPodTimes(
  kubeConfig: KubeConfig,
  namespace: string,
  labelSelector: string,
): Promise<{ times: PodTimes; stop: () => void }> {
  const times: PodTimes = {};
  const request = await new Watch(kubeConfig).watch(
    `/api/v1/namespaces/${namespace}/pods`,
    { labelSelector },
    (_type, pod: V1Pod) => {
      const now = Date.now();
      if (times.pod && times.pod.metadata?.uid !== pod.metadata?.uid) return;
      times.pod = pod;
      if (times.scheduledAt === undefined && pod.spec?.nodeName) times.scheduledAt = now;
      const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      if (times.readyAt === undefined && ready) times.readyAt = now;
    },
    () => undefined,
  );
  return { times, stop: () => request.abort() };
}

/**
 * The container's directory in a cgroup v1 hierarchy of the node (`memory`, `cpu`): the kubelet
 * (cgroupfs driver) puts it under the node's cgroupRoot, `kubepods/<qos>/pod<uid>/<container id>`.
 */
export function containerCgroup(hierarchy: string, nodeCgroup: string, containerId: string): string {
  const id = containerId.replace(/^[a-z]+:\/\//, '');
  const search = (dir: string, depth: number): string | undefined => {
    if (depth > 5) return undefined;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(dir, entry.name);
      if (entry.name === id) return path;
      const found = search(path, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  const root = join('/sys/fs/cgroup', hierarchy, nodeCgroup);
  const found = existsSync(root) ? search(root, 0) : undefined;
  if (!found) throw new Error(`no ${hierarchy} cgroup for container ${id} under ${root}`);
  return found;
}

/** A cgroup file's value, trimmed. */
export const cgroupValue = (dir: string, file: string): string =>
  readFileSync(join(dir, file), 'utf8').trim();

/** The `Key:` lines of /proc/<pid>/status that say who a process runs as and what it may do. */
export function processStatus(pid: number): Record<string, string> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Object.fromEntries(
    status
      .split('\n')
      .map((line) => /^(\w+):\s+(.*)$/.exec(line))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1] ?? '', (m[2] ?? '').trim()]),
  );
}

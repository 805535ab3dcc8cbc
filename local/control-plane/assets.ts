import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { BpaError } from '../../shared/errors.js';
import { repoRoot } from './repo-root.js';

/** Where the control-plane binaries are, and how they were found. */
export interface ControlPlaneBinaries {
  kubeApiserver: string;
  etcd: string;
  /** Kubernetes' own controllers (Jobs, Deployments, garbage collector, namespaces, endpoints). */
  kubeControllerManager: string;
  kubeScheduler: string;
  /** The directory holding kube-apiserver (the envtest "assets" directory). */
  assetsDir: string;
  source: 'KUBEBUILDER_ASSETS' | 'TEST_ASSET' | 'cache' | 'build';
}

export interface ControlPlaneVersions {
  kubernetes: string;
  etcd: string;
}

/** One pinned version from engines/versions.env (`KEY=value`). */
export function pinnedVersion(key: string, root = repoRoot()): string {
  const text = readFileSync(join(root, 'engines', 'versions.env'), 'utf8');
  const match = new RegExp(`^${key}=(\\S+)`, 'm').exec(text);
  if (!match?.[1]) throw new Error(`engines/versions.env has no ${key}`);
  return match[1];
}

/** The pinned versions from engines/versions.env. */
export function controlPlaneVersions(root = repoRoot()): ControlPlaneVersions {
  return { kubernetes: pinnedVersion('KUBERNETES_VERSION', root), etcd: pinnedVersion('ETCD_VERSION', root) };
}

/** The per-version cache directory build.sh builds into (keep in step with build.sh). */
export function binaryCacheDir(env: NodeJS.ProcessEnv = process.env, root = repoRoot()): string {
  const versions = controlPlaneVersions(root);
  const cacheHome = env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(
    cacheHome,
    'bpa-functions',
    'k8s',
    `kube-apiserver-${versions.kubernetes}_etcd-${versions.etcd}`,
  );
}

/** Whether `path` is a file this process may execute. */
export const isExecutable = (path: string) => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

const missing = (message: string) => new BpaError('ControlPlaneBinariesMissing', message, 'internal');

const controllerNames = {
  kubeControllerManager: 'kube-controller-manager',
  kubeScheduler: 'kube-scheduler',
} as const;

/**
 * Finds the four binaries with the same preference order as engines/build.sh
 * (KUBEBUILDER_ASSETS, then TEST_ASSET_*, then the cache) and runs build.sh only when a build is
 * needed, so a warm start spawns no shell. envtest's assets hold kube-apiserver and etcd only; the
 * controllers then come from TEST_ASSET_KUBE_CONTROLLER_MANAGER / TEST_ASSET_KUBE_SCHEDULER or the
 * cache.
 */
export async function locateBinaries(
  options: { env?: NodeJS.ProcessEnv; onBuildOutput?: (text: string) => void } = {},
): Promise<ControlPlaneBinaries> {
  const env = options.env ?? process.env;
  const root = repoRoot();
  const cache = binaryCacheDir(env, root);
  let core: Pick<ControlPlaneBinaries, 'kubeApiserver' | 'etcd' | 'assetsDir' | 'source'> | undefined;
  if (env.KUBEBUILDER_ASSETS) {
    const dir = env.KUBEBUILDER_ASSETS;
    const found = { kubeApiserver: join(dir, 'kube-apiserver'), etcd: join(dir, 'etcd') };
    for (const path of Object.values(found)) {
      if (!isExecutable(path)) throw missing(`KUBEBUILDER_ASSETS=${dir} has no executable ${path}`);
    }
    core = { ...found, assetsDir: dir, source: 'KUBEBUILDER_ASSETS' };
  } else if (env.TEST_ASSET_KUBE_APISERVER || env.TEST_ASSET_ETCD) {
    const kubeApiserver = env.TEST_ASSET_KUBE_APISERVER;
    const etcd = env.TEST_ASSET_ETCD;
    if (!kubeApiserver || !etcd) {
      throw missing('set both TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD, or neither');
    }
    for (const path of [kubeApiserver, etcd]) {
      if (!isExecutable(path)) throw missing(`${path} (from TEST_ASSET_*) is not an executable file`);
    }
    core = { kubeApiserver, etcd, assetsDir: dirname(kubeApiserver), source: 'TEST_ASSET' };
  }
  const controller = (key: keyof typeof controllerNames): string | undefined => {
    const name = controllerNames[key];
    const override = env[`TEST_ASSET_${name.toUpperCase().replace(/-/g, '_')}`];
    const candidates = [
      env.KUBEBUILDER_ASSETS ? join(env.KUBEBUILDER_ASSETS, name) : undefined,
      override,
      join(cache, name),
    ];
    if (override && !isExecutable(override))
      throw missing(`${override} (from TEST_ASSET_*) is not an executable file`);
    return candidates.find((path): path is string => !!path && isExecutable(path));
  };
  const cachedCore = { kubeApiserver: join(cache, 'kube-apiserver'), etcd: join(cache, 'etcd') };
  if (!core && isExecutable(cachedCore.kubeApiserver) && isExecutable(cachedCore.etcd)) {
    core = { ...cachedCore, assetsDir: cache, source: 'cache' };
  }
  const kubeControllerManager = controller('kubeControllerManager');
  const kubeScheduler = controller('kubeScheduler');
  if (core && kubeControllerManager && kubeScheduler)
    return { ...core, kubeControllerManager, kubeScheduler };

  const assetsDir = await runBuildScript(root, env, options.onBuildOutput);
  return {
    kubeApiserver: join(assetsDir, 'kube-apiserver'),
    etcd: join(assetsDir, 'etcd'),
    kubeControllerManager: join(assetsDir, 'kube-controller-manager'),
    kubeScheduler: join(assetsDir, 'kube-scheduler'),
    assetsDir,
    source: core?.source ?? 'build',
  };
}

/** Runs build.sh (a Go build: minutes the first time) and returns the directory it prints last. */
function runBuildScript(
  root: string,
  env: NodeJS.ProcessEnv,
  onOutput: (text: string) => void = (text) => process.stderr.write(text),
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(root, 'engines', 'build.sh')], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      onOutput(chunk.toString());
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const lastLine = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && lastLine) resolve(lastLine);
      else {
        reject(missing(`engines/build.sh failed (exit ${code}):\n${stderr.slice(-4000)}`));
      }
    });
  });
}

import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { BpaError } from '../../shared/errors.js';
import { repoRoot } from './repo-root.js';

/** Where the two control-plane binaries are, and how they were found. */
export interface ControlPlaneBinaries {
  kubeApiserver: string;
  etcd: string;
  /** The directory holding kube-apiserver (the envtest "assets" directory). */
  assetsDir: string;
  source: 'KUBEBUILDER_ASSETS' | 'TEST_ASSET' | 'cache' | 'build';
}

export interface ControlPlaneVersions {
  kubernetes: string;
  etcd: string;
}

/** The pinned versions from test/control-plane/versions.env. */
export function controlPlaneVersions(root = repoRoot()): ControlPlaneVersions {
  const text = readFileSync(join(root, 'test', 'control-plane', 'versions.env'), 'utf8');
  const value = (key: string) => {
    const match = new RegExp(`^${key}=(\\S+)`, 'm').exec(text);
    if (!match?.[1]) throw new Error(`versions.env has no ${key}`);
    return match[1];
  };
  return { kubernetes: value('KUBERNETES_VERSION'), etcd: value('ETCD_VERSION') };
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

const isExecutable = (path: string) => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

const missing = (message: string) => new BpaError('ControlPlaneBinariesMissing', message, 'internal');

/**
 * Finds kube-apiserver and etcd with the same preference order as build.sh
 * (KUBEBUILDER_ASSETS, then TEST_ASSET_KUBE_APISERVER + TEST_ASSET_ETCD, then the cache) and
 * runs build.sh only when a build is needed, so a warm start spawns no shell.
 */
export async function locateBinaries(
  options: { env?: NodeJS.ProcessEnv; onBuildOutput?: (text: string) => void } = {},
): Promise<ControlPlaneBinaries> {
  const env = options.env ?? process.env;
  if (env.KUBEBUILDER_ASSETS) {
    const dir = env.KUBEBUILDER_ASSETS;
    const found = { kubeApiserver: join(dir, 'kube-apiserver'), etcd: join(dir, 'etcd') };
    for (const path of Object.values(found)) {
      if (!isExecutable(path)) throw missing(`KUBEBUILDER_ASSETS=${dir} has no executable ${path}`);
    }
    return { ...found, assetsDir: dir, source: 'KUBEBUILDER_ASSETS' };
  }
  if (env.TEST_ASSET_KUBE_APISERVER || env.TEST_ASSET_ETCD) {
    const kubeApiserver = env.TEST_ASSET_KUBE_APISERVER;
    const etcd = env.TEST_ASSET_ETCD;
    if (!kubeApiserver || !etcd) {
      throw missing('set both TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD, or neither');
    }
    for (const path of [kubeApiserver, etcd]) {
      if (!isExecutable(path)) throw missing(`${path} (from TEST_ASSET_*) is not an executable file`);
    }
    return { kubeApiserver, etcd, assetsDir: dirname(kubeApiserver), source: 'TEST_ASSET' };
  }
  const root = repoRoot();
  const cache = binaryCacheDir(env, root);
  const cached = { kubeApiserver: join(cache, 'kube-apiserver'), etcd: join(cache, 'etcd') };
  if (isExecutable(cached.kubeApiserver) && isExecutable(cached.etcd)) {
    return { ...cached, assetsDir: cache, source: 'cache' };
  }
  const assetsDir = await runBuildScript(root, env, options.onBuildOutput);
  return {
    kubeApiserver: join(assetsDir, 'kube-apiserver'),
    etcd: join(assetsDir, 'etcd'),
    assetsDir,
    source: 'build',
  };
}

/** Runs build.sh (a Go build: minutes the first time) and returns the directory it prints last. */
function runBuildScript(
  root: string,
  env: NodeJS.ProcessEnv,
  onOutput: (text: string) => void = (text) => process.stderr.write(text),
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(root, 'test', 'control-plane', 'build.sh')], {
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
        reject(missing(`test/control-plane/build.sh failed (exit ${code}):\n${stderr.slice(-4000)}`));
      }
    });
  });
}

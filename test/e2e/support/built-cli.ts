/**
 * The e2e tests run `node bin/bpa.js` (the bundled CLI, dist/bundle/cli/main.mjs) as a real
 * process, so dist/ must match the sources. `npm test` builds first (pretest); when jest runs on
 * its own this rebuilds (tsc, then scripts/bundle.mjs) when a source is newer than the bundled
 * CLI. A directory lock keeps two test workers from building at once.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../../local/control-plane/repo-root.js';

const run = promisify(execFile);
const sourceDirs = ['shared', 'functions', 'local', 'cli'];

function newestSourceMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMtime(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** The tsc output (other tests run it) and the bundled CLI (bin/bpa.js runs it). */
const builtEntries = (root: string) => [
  join(root, 'dist', 'cli', 'main.js'),
  join(root, 'dist', 'bundle', 'cli', 'main.mjs'),
];

const isStale = (root: string) => {
  const newest = Math.max(...sourceDirs.map((dir) => newestSourceMtime(join(root, dir))));
  return builtEntries(root).some((entry) => !existsSync(entry) || statSync(entry).mtimeMs < newest);
};

/** Returns the path of bin/bpa.js after making sure dist/ is current. */
export async function builtCli(): Promise<string> {
  const root = repoRoot();
  const lock = join(root, 'dist', '.e2e-build-lock');
  mkdirSync(join(root, 'dist'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  try {
    if (isStale(root)) {
      // tsc emits even when another part of the tree has type errors; the tests judge behaviour.
      await run(
        process.execPath,
        [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
        {
          cwd: root,
        },
      ).catch(() => undefined);
      await run(process.execPath, [join(root, 'scripts', 'bundle.mjs')], { cwd: root });
    }
  } finally {
    rmdirSync(lock);
  }
  if (!existsSync(join(root, 'dist', 'bundle', 'cli', 'main.mjs')))
    throw new Error('npm run build did not produce dist/bundle/cli/main.mjs');
  return join(root, 'bin', 'bpa.js');
}

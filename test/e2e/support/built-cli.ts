/**
 * The e2e tests run `node bin/bpa.js` as a real process, so dist/ must match the sources.
 * `npm test` builds first (pretest); when jest runs on its own this rebuilds when a source is
 * newer than dist/cli/main.js. A directory lock keeps two test workers from building at once.
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

const isStale = (root: string) => {
  const entry = join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(entry)) return true;
  const built = statSync(entry).mtimeMs;
  return sourceDirs.some((dir) => newestSourceMtime(join(root, dir)) > built);
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
    }
  } finally {
    rmdirSync(lock);
  }
  if (!existsSync(join(root, 'dist', 'cli', 'main.js')))
    throw new Error('npm run build did not produce dist/cli/main.js');
  return join(root, 'bin', 'bpa.js');
}

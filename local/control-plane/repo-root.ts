import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Marker file that only the repository root has. */
const marker = join('engines', 'versions.env');

/**
 * The repository root, found by walking up from this module: works from the TypeScript
 * sources (tests, tsx) and from the compiled `dist/` tree alike.
 */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, marker))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the repository root (no ${marker} above this module)`);
    dir = parent;
  }
}

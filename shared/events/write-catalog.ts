import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildEventCatalog } from './catalog.js';

/**
 * `npm run catalog`: writes shared/events/catalog/*.json from the zod schemas and removes
 * files no longer generated. Runs from dist/shared/events/, so the target is found from the
 * repository root, not from this file's directory.
 */
const here = dirname(fileURLToPath(import.meta.url));
const repositoryRoot = resolve(here, here.includes(`${join('dist', 'shared')}`) ? '../../..' : '../..');
const catalogDir = join(repositoryRoot, 'shared', 'events', 'catalog');

const files = buildEventCatalog();
mkdirSync(catalogDir, { recursive: true });
for (const name of readdirSync(catalogDir)) {
  if (name.endsWith('.json') && !files.has(name)) rmSync(join(catalogDir, name));
}
for (const [name, text] of files) writeFileSync(join(catalogDir, name), text);
process.stdout.write(`wrote ${files.size} schemas to ${catalogDir}\n`);

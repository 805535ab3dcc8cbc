#!/usr/bin/env node
// Thin launcher: `npm run build` bundles the CLI into dist/bundle/cli/ (scripts/bundle.mjs),
// one chunk set per command, loaded only when that command runs.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const entry = fileURLToPath(new URL('../dist/bundle/cli/main.mjs', import.meta.url));
if (!existsSync(entry)) {
  process.stderr.write('bpa: not built yet; run `npm run build` first\n');
  process.exit(2);
}
const { main } = await import(pathToFileURL(entry).href);
process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});

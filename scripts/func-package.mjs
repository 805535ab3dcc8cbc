#!/usr/bin/env node
// Writes one self-contained `func` build context per function: dist/func/<name>/ holds the
// compiled function and shared/ JS (relative imports unchanged), its func.yaml, an index.js
// re-exporting `handle`, and a package.json that runs it with faas-js-runtime.
// Run after `npm run build` (npm run func:package does both).
//   node scripts/func-package.mjs [name ...]   (default: every functions/<name>/func.yaml)
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The runtime the func TypeScript builder expects on Node 20 (it brings its own cloudevents). */
const faasJsRuntimeVersion = '3.0.2';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const compiled = join(root, 'dist');

const names =
  process.argv.length > 2
    ? process.argv.slice(2)
    : readdirSync(join(root, 'functions')).filter((name) =>
        existsSync(join(root, 'functions', name, 'func.yaml')),
      );

/** Copies compiled JS (and source maps), never tests. */
const copyCompiled = (from, to) => {
  if (!existsSync(from)) throw new Error(`${from} is missing: run npm run build first`);
  cpSync(from, to, { recursive: true, filter: (source) => !/\.test\.js(\.map)?$/.test(source) });
};

for (const name of names) {
  const source = join(root, 'functions', name);
  if (!existsSync(join(source, 'func.yaml'))) throw new Error(`functions/${name}/func.yaml does not exist`);
  const target = join(compiled, 'func', name);
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  copyCompiled(join(compiled, 'shared'), join(target, 'shared'));
  copyCompiled(join(compiled, 'functions', name), join(target, 'functions', name));
  copyFileSync(join(source, 'func.yaml'), join(target, 'func.yaml'));
  const packageJson = {
    name,
    version: rootPackage.version,
    private: true,
    type: 'module',
    main: 'index.js',
    engines: rootPackage.engines,
    scripts: { start: 'faas-js-runtime ./index.js' },
    dependencies: { ...rootPackage.dependencies, 'faas-js-runtime': faasJsRuntimeVersion },
  };
  writeFileSync(join(target, 'package.json'), `${JSON.stringify(packageJson, null, 2)}\n`);
  writeFileSync(
    join(target, 'index.js'),
    `// The func entry point: faas-js-runtime calls handle(context, cloudevent).\nexport { handle } from './functions/${name}/index.js';\n`,
  );
  console.log(`dist/func/${name}: func deploy --path dist/func/${name}`);
}

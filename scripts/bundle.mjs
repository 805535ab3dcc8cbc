#!/usr/bin/env node
// One esbuild bundle per entry point, so a process parses one file instead of resolving and
// compiling some 1,500 modules (client-node alone is 1,200): a cold start is on the path of a
// scaled-to-zero function's first event (bench/cold-start.ts measures it).
//   dist/bundle/<name>.mjs         the function's server (functions/<name>/main.ts): what the
//                                  image (local/images/) and the benchmarks run
//   functions/<name>/dist/index.mjs  its `handle` for faas-js-runtime: with the package.json
//                                  beside it, functions/<name>/ is a `func deploy` build context
//   dist/bundle/<job>.mjs          the entry points of the Jobs a function creates, which run
//                                  the function's own image (scripts/bundle/job-entry-points.mjs)
//   dist/bundle/cli/main.mjs       the CLI (bin/bpa.js), split per command: a command's chunks
//                                  load only when it runs
//   dist/bundle/manifest.json      per function, its bundles and the packages left to node_modules:
//                                  what the images carry (local/images/, `npm run images`)
// Every folder of functions/ with a main.ts is bundled (image-upload and image-verify have no
// func.yaml: they deploy from manifests/components/image-service); the `func` build context only
// for those with a func.yaml.
// Bundled from the TypeScript sources (esbuild strips the types; `npm run typecheck` checks them).
//   node scripts/bundle.mjs [function-name ...]   (default: every function and the CLI)
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { jobEntryPoints } from './bundle/job-entry-points.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Left to node_modules (listed in each function's package.json):
 * - the OTLP exporter: imported only when OTEL_TRACES_EXPORTER=otlp (shared/telemetry/tracing.ts),
 *   so a function that does not export spans never reads it;
 * - ssh2: its optional native crypto binding is a `.node` file that cannot be bundled.
 */
export const external = ['@opentelemetry/exporter-trace-otlp-http', 'ssh2'];

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external,
  // The ESM build where a package has one (OpenTelemetry's): CommonJS cannot be tree-shaken.
  mainFields: ['module', 'main'],
  // Bundled CommonJS packages call require() for Node built-ins; ESM has none of its own.
  banner: {
    js: "import { createRequire as __bundleRequire } from 'node:module';\nconst require = __bundleRequire(import.meta.url);",
  },
  // Whitespace and syntax only: names stay (but for the few bundling renames to avoid a clash),
  // so stack traces read as in the sources.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'linked',
  logLevel: 'warning',
  alias: {
    // node-fetch 2 (client-node's HTTP) loads whatwg-url only to use it where Node has no URL
    // class (`Url.URL || whatwgUrl.URL`); its tr46 tables cost 10 MiB of heap at start.
    'whatwg-url': join(root, 'scripts/bundle/whatwg-url.mjs'),
  },
};

const functionNames = readdirSync(join(root, 'functions'))
  .filter((name) => existsSync(join(root, 'functions', name, 'main.ts')))
  .sort();
const hasFuncYaml = (name) => existsSync(join(root, 'functions', name, 'func.yaml'));
const requested = process.argv.slice(2);
for (const name of requested)
  if (!functionNames.includes(name)) throw new Error(`functions/${name}/main.ts does not exist`);
const names = requested.length > 0 ? requested : functionNames;

const builds = names.flatMap((name) => {
  const folder = join(root, 'functions', name);
  rmSync(join(folder, 'dist'), { recursive: true, force: true });
  return [
    build({
      ...common,
      entryPoints: [join(folder, 'main.ts')],
      outfile: join(root, 'dist/bundle', `${name}.mjs`),
    }),
    // keepNames: faas-js-runtime recognises a reply from our copy of cloudevents by
    // `constructor.name === 'CloudEvent'`, which a bundling rename would break. (It costs some
    // 6 MiB of heap, so the server bundle above goes without.)
    ...(hasFuncYaml(name)
      ? [
          build({
            ...common,
            keepNames: true,
            entryPoints: [join(folder, 'index.ts')],
            outfile: join(folder, 'dist/index.mjs'),
          }),
        ]
      : []),
    ...Object.entries(jobEntryPoints[name] ?? {}).map(([bundleName, source]) =>
      build({
        ...common,
        entryPoints: [join(folder, source)],
        outfile: join(root, 'dist/bundle', `${bundleName}.mjs`),
      }),
    ),
  ];
});
if (requested.length === 0) {
  rmSync(join(root, 'dist/bundle/cli'), { recursive: true, force: true });
  builds.push(
    build({
      ...common,
      entryPoints: [join(root, 'cli/main.ts')],
      outdir: join(root, 'dist/bundle/cli'),
      outExtension: { '.js': '.mjs' },
      splitting: true,
      chunkNames: 'chunks/[name]-[hash]',
    }),
  );
}
await Promise.all(builds);
const manifestFile = join(root, 'dist/bundle/manifest.json');
const manifest = existsSync(manifestFile)
  ? JSON.parse(readFileSync(manifestFile, 'utf8'))
  : { functions: {} };
manifest.external = external;
for (const name of names)
  manifest.functions[name] = { bundles: [name, ...Object.keys(jobEntryPoints[name] ?? {})] };
writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
for (const name of names)
  console.log(
    [`dist/bundle/${name}.mjs`, ...(hasFuncYaml(name) ? [`functions/${name}/dist/index.mjs`] : [])]
      .concat(Object.keys(jobEntryPoints[name] ?? {}).map((job) => `dist/bundle/${job}.mjs`))
      .join(', '),
  );
if (requested.length === 0) console.log('dist/bundle/cli/main.mjs');

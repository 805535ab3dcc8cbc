// The suites' test images, `bpa.local/test/<name>:1`: built by the same builder
// as the project's images (local/images/build.ts: layers cached by content hash, an oci-archive
// each, archives/test-<name>.tar), named `bpa.local/test/<name>:1` so tests name them as before. No registry, no Debian
// root: the machine's busybox (local/kubelet-node/busybox-image.ts, the same files as the real
// node's busybox image) is their shell, and the Node.js binary the function images carry (with
// the libraries it loads) runs the fixture scripts. They run as 65532 unless a pod says otherwise
// (the KUD Job's pod sets runAsUser 0 itself, as KUD's own image runs).
import { readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { busyboxEntries, sharedLibraries, type LayerEntry } from '../kubelet-node/index.js';
import { repoRoot } from '../control-plane/repo-root.js';
import { ImageBuilder, type BuiltImage } from './build.js';
import { cacheRoot, nodeBinary } from './inputs.js';
import { imageUser, type ImageRecipe, type LayerRecipe } from './recipes.js';
import type { TarEntry } from './tar.js';
import { parentDirs } from './tree.js';

/** The name a suite's pods give a test image. */
export const testImageReference = (name: string) => `bpa.local/test/${name}:1`;

export const kudOutcomes = ['succeeds', 'fails', 'hangs', 'waits'] as const;

const root = { uid: 0, gid: 0 };
const path = 'PATH=/usr/local/bin:/usr/bin:/bin';

function toTar(entries: LayerEntry[]): TarEntry[] {
  return entries.flatMap((entry): TarEntry[] => {
    const parents = parentDirs(entry.path);
    if (entry.kind === 'dir')
      return [...parents, { type: 'dir', path: entry.path, mode: entry.mode ?? 0o755, ...root }];
    if (entry.kind === 'symlink')
      return [...parents, { type: 'symlink', path: entry.path, target: entry.target, ...root }];
    const bytes = entry.content;
    return [
      ...parents,
      {
        type: 'file',
        path: entry.path,
        mode: entry.mode ?? 0o644,
        size: bytes.length,
        source: { bytes },
        ...root,
      },
    ];
  });
}

const fileEntry = (at: string, source: string, mode: number): LayerEntry => ({
  path: at,
  kind: 'file',
  content: readFileSync(source),
  mode,
});

export function testImageRecipes(repo: string, nodeDir: string): ImageRecipe[] {
  const fixtures = join(repo, 'test', 'fixtures', 'node');
  const shell: LayerRecipe = { name: 'busybox', entries: () => toTar(busyboxEntries()) };
  const node: LayerRecipe = {
    name: 'node + libraries',
    entries: () => {
      const binary = join(nodeDir, 'node');
      return toTar([
        fileEntry('usr/local/bin/node', binary, 0o755),
        ...sharedLibraries(binary).map((lib) => fileEntry(lib.slice(1), realpathSync(lib), 0o755)),
      ]);
    },
  };
  const run = (name: string, more: Partial<ImageRecipe['run']>): ImageRecipe['run'] => ({
    User: imageUser,
    Entrypoint: ['/bin/sh'],
    Env: [path],
    WorkingDir: '/',
    Labels: { 'org.opencontainers.image.title': `test/${name}` },
    ...more,
  });
  const script = (name: string, file: string, env: string[] = []): ImageRecipe => ({
    name,
    layers: [
      shell,
      node,
      { name, entries: () => toTar([fileEntry(`test/${file}`, join(fixtures, file), 0o644)]) },
    ],
    run: run(name, { Entrypoint: ['/usr/local/bin/node', `/test/${file}`], Env: [path, ...env] }),
  });
  const installers = join(fixtures, 'kud-installers');
  return [
    { name: 'shell', layers: [shell], run: run('shell', {}) },
    { name: 'node', layers: [shell, node], run: run('node', { Entrypoint: ['/usr/local/bin/node'] }) },
    script('http', 'http-server.mjs', ['PORT=8080']),
    script('report', 'report.mjs'),
    script('event-recorder', 'event-recorder.mjs', ['PORT=8080']),
    // The KUD Job runs `/bin/sh -c "...; cp -r /.ssh /root/; ./installer --cluster <c> ..."` in
    // the WORKDIR, as in KUD's own image: the installer there, admin-conf.sh beside its folder.
    ...kudOutcomes.map((outcome): ImageRecipe => ({
      name: `kud-${outcome}`,
      layers: [
        shell,
        {
          name: `kud-${outcome} installer`,
          entries: () =>
            toTar([
              { path: 'root', kind: 'dir', mode: 0o700 },
              fileEntry('kud/admin-conf.sh', join(installers, 'admin-conf.sh'), 0o644),
              fileEntry(`kud/${outcome}/installer`, join(installers, outcome, 'installer'), 0o755),
            ]),
        },
      ],
      run: run(`kud-${outcome}`, { WorkingDir: `/kud/${outcome}` }),
    })),
  ];
}

/**
 * Builds the test images (all, or `only`) into the images folder (BPA_IMAGES_DIR or
 * ~/.cache/bpa-functions/images, beside the project's: layers are shared by digest).
 */
export function buildTestImages(
  options: { out?: string; only?: readonly string[]; log?: (line: string) => void } = {},
): BuiltImage[] {
  const repo = repoRoot();
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const out = options.out ?? (process.env.BPA_IMAGES_DIR || join(cacheRoot(), 'images'));
  const builder = new ImageBuilder(out);
  const images = testImageRecipes(repo, nodeBinary().dir)
    .filter((recipe) => !options.only || options.only.includes(recipe.name))
    .map((recipe) => {
      const image = builder.build(
        { ...recipe, name: `test-${recipe.name}` },
        testImageReference(recipe.name),
      );
      log(
        `[images] ${image.name.padEnd(18)} ${(image.bytes / 2 ** 20).toFixed(1).padStart(6)} MiB  ${image.seconds.toFixed(1).padStart(5)} s${image.cached ? ' (cached)' : ''}  ${image.digest}`,
      );
      return image;
    });
  builder.writeIndex();
  return images;
}

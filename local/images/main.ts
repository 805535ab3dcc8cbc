// `npm run images`: the project's images from this repository alone, no registry, no container
// engine (docs/container-images.md). Writes
//   <out>/layout/                  one OCI image layout holding every image (blobs shared)
//   <out>/archives/<image>.tar     an oci-archive per image: `ctr -n k8s.io images import <tar>`
//   <out>/images.json              image -> reference, digest, archive
//   <component>/kustomization.yaml the kustomize Component naming every image by digest
// and prints each image's size and build time.
//   node dist/local/images/main.js [--only a,b] [--out DIR] [--repository REPO] [--component DIR] [--knative] [--tests]
// --knative: also Knative's components from their built binaries (local/images/knative.ts), and
// <out>/ko-images.json mapping each `ko://` import path to its image by digest.
// --tests: also the suites' test images (local/images/test-images.ts, `bpa.local/test/<name>:1`).
// Defaults: $BPA_IMAGES_DIR or ~/.cache/bpa-functions/images, localhost/bpa-functions (names a node imports and
// never pulls), manifests/components/images-local (gitignored).
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { repoRoot } from '../control-plane/repo-root.js';
import { ImageBuilder, type BuiltImage } from './build.js';
import { cacheRoot, debianRoot, nodeBinary, pauseBinary, runtimeModules } from './inputs.js';
import { writeImagesComponent } from './overlay.js';
import { knativeRecipes } from './knative.js';
import { imageRecipes, readBundleManifest } from './recipes.js';
import { buildTestImages } from './test-images.js';

export interface ImagesOptions {
  only?: string[];
  out?: string;
  repository?: string;
  component?: string;
  /** Also Knative's components, from their built binaries (local/images/knative.ts). */
  knative?: boolean;
  log?: (line: string) => void;
}

export function projectVersion(root: string): string {
  return (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * Builds the images (all, or `only`) and writes the Component of their digests: to `component`,
 * else (a build of every image) to manifests/components/images-local, else nowhere (a partial
 * build does not replace the full list).
 */
export function buildProjectImages(options: ImagesOptions = {}): {
  images: BuiltImage[];
  component: string | undefined;
  out: string;
} {
  const root = repoRoot();
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // BPA_IMAGES_DIR: a tree of its own (two worktrees building into one folder replace each
  // other's archives between a build and its import).
  const out = options.out ?? (process.env.BPA_IMAGES_DIR || join(cacheRoot(), 'images'));
  const repository = options.repository ?? 'localhost/bpa-functions';
  const bundles = readBundleManifest(root);
  log('[images] inputs: Debian roots, Node.js, pause, node_modules');
  const inputs = {
    repo: root,
    baseRoot: debianRoot(root, 'base'),
    kudRoot: debianRoot(root, 'kud'),
    nodeDir: nodeBinary().dir,
    pauseDir: pauseBinary(root).dir,
    modules: runtimeModules(root, bundles.external),
  };
  const knative = options.knative ? knativeRecipes() : [];
  if (options.knative && knative.length === 0)
    log('[images] no Knative binaries built yet (engines/build.sh knative): none of its images');
  const recipes = [...imageRecipes(inputs, bundles), ...knative].filter(
    (r) => !options.only || options.only.includes(r.name),
  );
  const version = projectVersion(root);
  const builder = new ImageBuilder(out);
  const images = recipes.map((recipe) => {
    const image = builder.build(recipe, `${repository}/${recipe.name}:${version}`);
    log(
      `[images] ${image.name.padEnd(18)} ${(image.bytes / 2 ** 20).toFixed(1).padStart(6)} MiB  ${image.seconds.toFixed(1).padStart(5)} s${image.cached ? ' (cached)' : ''}  ${image.digest}`,
    );
    return image;
  });
  builder.writeIndex();
  writeFileSync(
    join(out, 'images.json'),
    `${JSON.stringify(Object.fromEntries(images.map((i) => [i.name, i])), null, 2)}\n`,
  );
  const koPathOf = new Map(knative.map((r) => [r.name, r.koPath]));
  writeKoImages(out, images, koPathOf);
  const componentDir =
    options.component ?? (options.only ? undefined : join(root, 'manifests', 'components', 'images-local'));
  const component =
    componentDir === undefined
      ? undefined
      : writeImagesComponent(
          componentDir,
          images.map((i) => {
            const koPath = koPathOf.get(i.name);
            if (!koPath) return i;
            // The dead-letter sink names event_display by Knative's released name.
            const released = koPath.endsWith('/event_display') ? [`gcr.io/knative-releases/${koPath}`] : [];
            return { ...i, names: [`ko://${koPath}`, ...released] };
          }),
          repository,
          `Generated by \`npm run images\` (local/images/): do not edit. The project's images by digest,\nas built into ${out}. Add this folder to an overlay's components: (docs/container-images.md).`,
        );
  log(`[images] ${images.length} images in ${out}${component ? `; digests in ${component}` : ''}`);
  return { images, component, out };
}

/** An image by digest, as a pod names it: `<repository>/<image>@<digest>`. */
export const pinnedReference = (i: BuiltImage) => `${i.reference.replace(/:[^:/]*$/, '')}@${i.digest}`;

/**
 * Knative's YAML names its images `ko://<import path>`, in containers and in env values alike:
 * `<out>/ko-images.json` maps each to its image by digest. Resolves with that map.
 */
function writeKoImages(
  out: string,
  images: BuiltImage[],
  koPathOf: Map<string, string>,
): Record<string, string> {
  const koImages = Object.fromEntries(
    images
      .filter((i) => koPathOf.has(i.name))
      .map((i) => [`ko://${koPathOf.get(i.name) ?? ''}`, pinnedReference(i)]),
  );
  if (Object.keys(koImages).length > 0)
    writeFileSync(join(out, 'ko-images.json'), `${JSON.stringify(koImages, null, 2)}\n`);
  return koImages;
}

/**
 * Knative's images alone (those engines/build.sh has built binaries for), into the same folder
 * as `npm run images` (its layout index keeps the other images; images.json and the Component
 * are left as they are): what a real node imports to run Knative's config/ (local/knative/real-node.ts).
 */
export function buildKnativeImages(
  options: { out?: string; repository?: string; log?: (line: string) => void } = {},
): {
  images: BuiltImage[];
  /** `ko://<import path>` -> `localhost/bpa-functions/knative-…@<digest>`. */
  koImages: Record<string, string>;
  out: string;
} {
  const log = options.log ?? (() => undefined);
  const out = options.out ?? (process.env.BPA_IMAGES_DIR || join(cacheRoot(), 'images'));
  const repository = options.repository ?? 'localhost/bpa-functions';
  const version = projectVersion(repoRoot());
  const recipes = knativeRecipes();
  const builder = new ImageBuilder(out);
  const images = recipes.map((recipe) => builder.build(recipe, `${repository}/${recipe.name}:${version}`));
  builder.writeIndex();
  const koImages = writeKoImages(out, images, new Map(recipes.map((r) => [r.name, r.koPath])));
  const bytes = images.reduce((sum, i) => sum + i.bytes, 0);
  log(
    `[images] ${images.length} Knative images (${(bytes / 2 ** 20).toFixed(0)} MiB${images.every((i) => i.cached) ? ', cached' : ''}) in ${out}`,
  );
  return { images, koImages, out };
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      out: { type: 'string' },
      repository: { type: 'string' },
      component: { type: 'string' },
      knative: { type: 'boolean' },
      tests: { type: 'boolean' },
    },
  });
  const started = Date.now();
  buildProjectImages({
    ...(values.only ? { only: values.only.split(',') } : {}),
    ...(values.out ? { out: values.out } : {}),
    ...(values.repository ? { repository: values.repository } : {}),
    ...(values.component ? { component: values.component } : {}),
    knative: values.knative === true,
  });
  if (values.tests) buildTestImages(values.out ? { out: values.out } : {});
  process.stderr.write(`[images] done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

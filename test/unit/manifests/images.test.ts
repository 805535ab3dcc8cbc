// Images by digest from one place (contract section 13): the Component `npm run images` writes and
// the overlay docs/deploy.md §3 shows, rendered by the real kustomize (`kubectl kustomize`). Every
// image a Job runs (bpa-config's KUD_IMAGE, CLEANUP_IMAGE, KUBECONFIG_PUBLISHER_IMAGE,
// INSTALL_JOB_IMAGE) must follow an `images:` entry wherever it is set, an operator's overlay too.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse, stringify } from 'yaml';
import { imagesComponent } from '../../../local/images/overlay.js';
import { imageRecipes, readBundleManifest } from '../../../local/images/recipes.js';
import { kustomize, kustomizeWithComponents, manifestsDir, ofKind, parseObjects, repoRoot, type KubeObject } from './kustomize.js';

const jobImageKeys = ['KUD_IMAGE', 'CLEANUP_IMAGE', 'KUBECONFIG_PUBLISHER_IMAGE', 'INSTALL_JOB_IMAGE'] as const;
const recipeNames = imageRecipes(
  { repo: repoRoot, baseRoot: '', kudRoot: '', nodeDir: '', pauseDir: '', modules: [] },
  readBundleManifest(repoRoot),
).map((r) => r.name);
const digestOf = (name: string) => `sha256:${Buffer.from(name).toString('hex').padEnd(64, '0').slice(0, 64)}`;

/** Renders a tree of kustomization folders written in a temporary directory; `..MANIFESTS` is manifests/. */
function render(files: Record<string, string>, entry: string): KubeObject[] {
  const root = mkdtempSync(join(tmpdir(), 'bpa-images-'));
  try {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(root, path, '..'), { recursive: true });
      writeFileSync(join(root, path), text.replaceAll('..MANIFESTS', relative(join(root, path, '..'), manifestsDir)));
    }
    return parseObjects(kustomize(join(root, entry)));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

function bpaConfig(objects: KubeObject[]): Record<string, string> {
  const config = ofKind(objects, 'ConfigMap').find((o) => o.metadata.name === 'bpa-config');
  return (config as unknown as { data: Record<string, string> }).data;
}

function containerImages(objects: KubeObject[]): Map<string, string> {
  const images = new Map<string, string>();
  for (const o of objects) {
    const spec = (o as unknown as { spec?: { template?: { spec?: { containers?: { name: string; image: string }[] } } } }).spec;
    for (const c of spec?.template?.spec?.containers ?? []) images.set(o.metadata.name, c.image);
  }
  return images;
}

/** The files of the docs/deploy.md overlay `images`, by `<dir>/<file>`. */
function docsImagesOverlay(): Record<string, string> {
  const doc = readFileSync(join(repoRoot, 'docs', 'deploy.md'), 'utf8');
  const section = /<!-- overlay:images:start -->([\s\S]*?)<!-- overlay:images:end -->/.exec(doc)?.[1] ?? '';
  const files: Record<string, string> = {};
  for (const [, path = '', body = ''] of section.matchAll(/```yaml\n# (\S+)\n([\s\S]*?)```/g))
    files[path] = body.replace('../manifests', '..MANIFESTS');
  return files;
}

describe('images by digest from one place', () => {
  it('has a recipe (npm run images) for every image the manifests and their components name', () => {
    const rendered = kustomizeWithComponents(['image-service']) + readFileSync(join(manifestsDir, 'leases-publisher', 'ironic-sidecar-patch.yaml'), 'utf8');
    const named = new Set([...rendered.matchAll(/ghcr\.io\/bpa-functions\/([a-z-]+)/g)].map((m) => m[1]));
    expect([...named].filter((name) => name && !recipeNames.includes(name))).toEqual([]);
    expect(named.size).toBeGreaterThanOrEqual(8);
  });

  it('moves the functions and every Job image with the generated Component, and an operator overlay on top moves them again', () => {
    const component = imagesComponent(
      recipeNames.map((name) => ({ name, digest: digestOf(name) })),
      'localhost/bpa-functions',
      'test',
    );
    const files = {
      'images-local/kustomization.yaml': component,
      'local/kustomization.yaml': stringify({ resources: ['..MANIFESTS'], components: ['../images-local'] }),
      'operator/kustomization.yaml': stringify({
        resources: ['../local'],
        images: [
          { name: 'localhost/bpa-functions/software-install', newName: 'registry.example/si', newTag: '7' },
          { name: 'localhost/bpa-functions/cleanup', newName: 'registry.example/cleanup', digest: digestOf('x') },
        ],
      }),
    };
    const local = render(files, 'local');
    const config = bpaConfig(local);
    const ref = (name: string) => `localhost/bpa-functions/${name}@${digestOf(name)}`;
    expect(Object.fromEntries(jobImageKeys.map((k) => [k, config[k]]))).toEqual({
      KUD_IMAGE: ref('kud-stand-in'),
      CLEANUP_IMAGE: ref('cleanup'),
      KUBECONFIG_PUBLISHER_IMAGE: ref('kud-job-launch'),
      INSTALL_JOB_IMAGE: ref('software-install'),
    });
    const images = containerImages(local);
    for (const name of ['host-lookup', 'inventory-render', 'kud-job-launch', 'software-install']) expect(images.get(name)).toBe(ref(name));
    // Nothing of ours is left by tag once the Component is in.
    const left = [...images.values(), ...Object.values(config)].filter((v) => v.includes('ghcr.io/bpa-functions'));
    expect(left).toEqual([]);

    const operator = render(files, 'operator');
    expect(bpaConfig(operator).INSTALL_JOB_IMAGE).toBe('registry.example/si:7');
    expect(containerImages(operator).get('software-install')).toBe('registry.example/si:7');
    expect(bpaConfig(operator).CLEANUP_IMAGE).toBe(`registry.example/cleanup@${digestOf('x')}`);
    expect(bpaConfig(operator).KUD_IMAGE).toBe(ref('kud-stand-in'));
  });

  it('renders the docs/deploy.md overlay as written: Services and Jobs move together', () => {
    const files = docsImagesOverlay();
    expect(Object.keys(files).sort()).toEqual(['my-images/kustomization.yaml', 'my-overlay/kustomization.yaml']);
    const objects = render(files, 'my-overlay');
    const config = bpaConfig(objects);
    const images = containerImages(objects);
    const host = `registry.example.com/bpa/host-lookup@sha256:${'1'.repeat(64)}`;
    const launcher = `registry.example.com/bpa/kud-job-launch@sha256:${'2'.repeat(64)}`;
    expect(images.get('host-lookup')).toBe(host);
    expect(images.get('kud-job-launch')).toBe(launcher);
    expect(config.KUBECONFIG_PUBLISHER_IMAGE).toBe(launcher);
    expect(config.KUD_IMAGE).toBe('registry.example.com/kud/installer:v2.0.0');
    // What the Component does not name keeps the manifests' tag.
    expect(config.CLEANUP_IMAGE).toBe('ghcr.io/bpa-functions/cleanup:0.1.0');
    expect(parse(files['my-images/kustomization.yaml'] ?? '')).toMatchObject({ kind: 'Component' });
  });
});

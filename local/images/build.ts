// Builds the recipes into one OCI layout (blobs shared between images) and an oci-archive per
// image. A layer is keyed by the sha256 of what goes into it (paths, modes, owners, bytes): when
// the key is known and its blob is there, the layer is not written again, and an image whose
// manifest is unchanged keeps its archive, so an unchanged image costs a read of its inputs only.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BlobStore,
  imageConfig,
  imageManifest,
  mediaTypes,
  refAnnotations,
  writeArchive,
  writeLayoutIndex,
  type Descriptor,
} from './oci.js';
import type { ImageRecipe, LayerRecipe } from './recipes.js';
import type { TarEntry } from './tar.js';

export interface BuiltImage {
  name: string;
  /** The reference the image is stored under (io.containerd.image.name). */
  reference: string;
  /** The manifest's digest: what a pod names after `@`. */
  digest: string;
  /** Manifest, config and layers together (uncompressed layers). */
  bytes: number;
  archive: string;
  seconds: number;
  /** Every layer came from the cache. */
  cached: boolean;
}

/** The sha256 of a layer's content: every entry's header fields and its file's bytes. */
export function contentKey(entries: TarEntry[]): string {
  const hash = createHash('sha256').update('bpa-layer-v1\n');
  for (const entry of entries) {
    hash.update(JSON.stringify({ ...entry, source: undefined }));
    if (entry.type === 'file')
      hash.update('bytes' in entry.source ? entry.source.bytes : readFileSync(entry.source.file));
  }
  return hash.digest('hex');
}

export class ImageBuilder {
  readonly store: BlobStore;
  private readonly layers = new Map<LayerRecipe, { descriptor: Descriptor; cached: boolean }>();
  private readonly manifests = new Map<string, Descriptor>();

  constructor(readonly outDir: string) {
    this.store = new BlobStore(join(outDir, 'layout'));
    mkdirSync(join(outDir, 'layer-keys'), { recursive: true });
    mkdirSync(join(outDir, 'archives'), { recursive: true });
    const index = join(outDir, 'layout', 'index.json');
    if (existsSync(index))
      for (const m of (JSON.parse(readFileSync(index, 'utf8')) as { manifests: Descriptor[] }).manifests) {
        const reference = m.annotations?.['io.containerd.image.name'];
        if (reference && this.store.has(m.digest)) this.manifests.set(reference, m);
      }
  }

  private layer(recipe: LayerRecipe): { descriptor: Descriptor; cached: boolean } {
    const known = this.layers.get(recipe);
    if (known) return known;
    const entries = recipe.entries();
    const key = contentKey(entries);
    const keyFile = join(this.outDir, 'layer-keys', key);
    const digest = existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : '';
    const result =
      digest && this.store.has(digest)
        ? { descriptor: this.store.describe(mediaTypes.layer, digest), cached: true }
        : { descriptor: this.store.addLayer(entries), cached: false };
    writeFileSync(keyFile, result.descriptor.digest);
    this.layers.set(recipe, result);
    return result;
  }

  build(recipe: ImageRecipe, reference: string): BuiltImage {
    const started = process.hrtime.bigint();
    const layers = recipe.layers.map((l) => this.layer(l));
    const descriptors = layers.map((l) => l.descriptor);
    const config = this.store.addJson(mediaTypes.config, imageConfig(recipe.run, descriptors));
    const manifest = {
      ...this.store.addJson(mediaTypes.manifest, imageManifest(config, descriptors)),
      annotations: refAnnotations(reference),
    };
    this.manifests.set(reference, manifest);
    const archive = join(this.outDir, 'archives', `${recipe.name}.tar`);
    const stamp = `${archive}.manifest`;
    const current =
      existsSync(archive) &&
      existsSync(stamp) &&
      readFileSync(stamp, 'utf8') === `${manifest.digest} ${reference}`;
    if (!current) {
      const temporary = `${archive}.${process.pid}.tmp`;
      try {
        writeArchive(temporary, this.store, manifest, [config, ...descriptors]);
        renameSync(temporary, archive);
      } finally {
        rmSync(temporary, { force: true });
      }
      writeFileSync(stamp, `${manifest.digest} ${reference}`);
    }
    return {
      name: recipe.name,
      reference,
      digest: manifest.digest,
      bytes: manifest.size + config.size + descriptors.reduce((sum, l) => sum + l.size, 0),
      archive,
      seconds: Number(process.hrtime.bigint() - started) / 1e9,
      cached: current && layers.every((l) => l.cached),
    };
  }

  /** index.json of the layout: every image this directory holds, by reference. */
  writeIndex(): void {
    writeLayoutIndex(
      this.store,
      [...this.manifests.values()].sort((a, b) =>
        (a.annotations?.['io.containerd.image.name'] ?? '').localeCompare(
          b.annotations?.['io.containerd.image.name'] ?? '',
        ),
      ),
    );
  }
}

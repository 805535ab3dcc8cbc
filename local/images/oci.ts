// OCI image layouts (image-spec v1.1: oci-layout, index.json, blobs/sha256/<hex>) written with no
// registry and no container engine, and the `oci-archive` tar of one image (what
// `ctr -n k8s.io images import`, skopeo's `oci-archive:` and crane read). Blobs are named by the
// sha256 of their bytes; JSON is written in one fixed key order, so the same layers give the same
// manifest digest.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sortEntries } from './tree.js';
import { writeTar, type TarEntry } from './tar.js';

export const mediaTypes = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layer: 'application/vnd.oci.image.layer.v1.tar',
} as const;

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/** What the image runs (the config's `config`: user, entrypoint...). */
export interface RunConfig {
  User: string;
  Entrypoint: string[];
  Cmd?: string[];
  Env: string[];
  WorkingDir: string;
  Labels?: Record<string, string>;
}

export const layoutFile = JSON.stringify({ imageLayoutVersion: '1.0.0' });

export function sha256(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A layout's blob store: every blob once, named by its digest. */
export class BlobStore {
  readonly blobs: string;
  constructor(readonly dir: string) {
    this.blobs = join(dir, 'blobs', 'sha256');
    mkdirSync(this.blobs, { recursive: true });
    writeFileSync(join(dir, 'oci-layout'), layoutFile);
  }

  path(digest: string): string {
    return join(this.blobs, digest.replace(/^sha256:/, ''));
  }

  has(digest: string): boolean {
    return existsSync(this.path(digest));
  }

  /** Writes a layer from its entries (sorted here); its digest is also its diff_id (uncompressed). */
  addLayer(entries: TarEntry[]): Descriptor {
    const temporary = join(this.blobs, `.layer-${process.pid}-${Date.now()}`);
    try {
      const { sha256: hex, size } = writeTar(temporary, sortEntries(entries));
      renameSync(temporary, join(this.blobs, hex));
      return { mediaType: mediaTypes.layer, digest: `sha256:${hex}`, size };
    } finally {
      rmSync(temporary, { force: true });
    }
  }

  addJson(mediaType: string, value: unknown): Descriptor {
    const bytes = Buffer.from(JSON.stringify(value));
    const hex = sha256(bytes);
    writeFileSync(join(this.blobs, hex), bytes);
    return { mediaType, digest: `sha256:${hex}`, size: bytes.length };
  }

  /** The descriptor of a blob already stored (a cached layer). */
  describe(mediaType: string, digest: string): Descriptor {
    return { mediaType, digest, size: statSync(this.path(digest)).size };
  }
}

/** The image config: linux/amd64, the layers' diff_ids, no creation time (a fixed epoch). */
export function imageConfig(run: RunConfig, layers: Descriptor[]): Record<string, unknown> {
  return {
    created: '1970-01-01T00:00:00Z',
    architecture: 'amd64',
    os: 'linux',
    config: run,
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) },
  };
}

export function imageManifest(config: Descriptor, layers: Descriptor[]): Record<string, unknown> {
  return {
    schemaVersion: 2,
    mediaType: mediaTypes.manifest,
    config: { mediaType: config.mediaType, digest: config.digest, size: config.size },
    layers: layers.map((l) => ({ mediaType: l.mediaType, digest: l.digest, size: l.size })),
  };
}

/**
 * The annotations an index entry carries: containerd names the imported image by
 * `io.containerd.image.name`; the OCI ref name is the tag (as `docker save`/buildah write it).
 */
export function refAnnotations(reference: string): Record<string, string> {
  const tag = reference.slice(reference.lastIndexOf(':') + 1);
  return { 'io.containerd.image.name': reference, 'org.opencontainers.image.ref.name': tag };
}

export function imageIndex(manifests: Descriptor[]): Record<string, unknown> {
  return { schemaVersion: 2, mediaType: mediaTypes.index, manifests };
}

/** Writes index.json of the layout (every image built, by reference). */
export function writeLayoutIndex(store: BlobStore, manifests: Descriptor[]): void {
  writeFileSync(join(store.dir, 'index.json'), JSON.stringify(imageIndex(manifests)));
}

/**
 * The oci-archive of one image: a tar of a layout holding it alone (its manifest, config and
 * layers from the store). Returns the archive's sha256 and size.
 */
export function writeArchive(
  file: string,
  store: BlobStore,
  manifest: Descriptor,
  blobs: Descriptor[],
): { sha256: string; size: number } {
  const owner = { uid: 0, gid: 0 };
  const entries: TarEntry[] = [
    { type: 'dir', path: 'blobs', mode: 0o755, ...owner },
    { type: 'dir', path: 'blobs/sha256', mode: 0o755, ...owner },
    ...[manifest, ...blobs].map((blob): TarEntry => ({
      type: 'file',
      path: `blobs/sha256/${blob.digest.replace(/^sha256:/, '')}`,
      mode: 0o644,
      size: blob.size,
      source: { file: store.path(blob.digest) },
      ...owner,
    })),
    jsonFile('index.json', imageIndex([manifest])),
    {
      type: 'file',
      path: 'oci-layout',
      mode: 0o644,
      size: layoutFile.length,
      source: { bytes: Buffer.from(layoutFile) },
      ...owner,
    },
  ];
  return writeTar(file, sortEntries(entries));
}

function jsonFile(path: string, value: unknown): TarEntry {
  const bytes = Buffer.from(JSON.stringify(value));
  return { type: 'file', path, mode: 0o644, size: bytes.length, source: { bytes }, uid: 0, gid: 0 };
}

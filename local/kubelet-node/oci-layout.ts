/**
 * A reproducible OCI image layout tar from a handful of files, for the images the real node needs
 * before `npm run images` exists for them: the sandbox (pause) image and the tests' busybox image.
 * Everything is fixed (mtime 0, uid 0, sorted entries, uncompressed layer), so the same files give
 * the same digest; `ctr -n k8s.io images import` reads the result.
 */
import { createHash } from 'node:crypto';

/** One entry of the image's single layer. */
export type LayerEntry =
  | { path: string; kind: 'file'; content: Buffer; mode?: number }
  | { path: string; kind: 'dir'; mode?: number }
  | { path: string; kind: 'symlink'; target: string };

export interface OciImageSpec {
  /** The full reference containerd stores, e.g. `localhost/bpa/pause:v1.36.3`. */
  name: string;
  entries: LayerEntry[];
  entrypoint: string[];
  cmd?: string[];
  env?: string[];
  user?: string;
}

export interface OciImageTar {
  tar: Buffer;
  /** sha256:<hex> of the manifest: what the kubelet reports as the image's digest. */
  manifestDigest: string;
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

/** A ustar header block; names over 100 bytes go into the prefix field. */
function header(path: string, size: number, mode: number, type: '0' | '5' | '2', link = ''): Buffer {
  const block = Buffer.alloc(512);
  let name = path;
  let prefix = '';
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100)
      throw new Error(`tar path too long: ${path}`);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
  }
  block.write(name, 0, 100);
  block.write(octal(mode, 8), 100);
  block.write(octal(0, 8), 108);
  block.write(octal(0, 8), 116);
  block.write(octal(size, 12), 124);
  block.write(octal(0, 12), 136);
  block.write('        ', 148);
  block.write(type, 156);
  block.write(link, 157, 100);
  block.write('ustar\0', 257);
  block.write('00', 263);
  block.write(prefix, 345, 155);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(octal(sum, 7) + ' ', 148);
  return block;
}

function pad(content: Buffer): Buffer[] {
  const rest = content.length % 512;
  return rest === 0 ? [content] : [content, Buffer.alloc(512 - rest)];
}

/** A tar of `files` (path -> content, written in the given order) or of layer entries. */
export function tarOf(entries: LayerEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    if (entry.kind === 'file') {
      parts.push(header(entry.path, entry.content.length, entry.mode ?? 0o644, '0'), ...pad(entry.content));
    } else if (entry.kind === 'dir') {
      parts.push(
        header(entry.path.endsWith('/') ? entry.path : `${entry.path}/`, 0, entry.mode ?? 0o755, '5'),
      );
    } else {
      parts.push(header(entry.path, 0, 0o777, '2', entry.target));
    }
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

const sha256 = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/** Parents first, then sorted by path: the order a reader needs and one that never varies. */
function layerEntries(entries: LayerEntry[]): LayerEntry[] {
  const byPath = new Map<string, LayerEntry>();
  for (const entry of entries) {
    const parts = entry.path.replace(/^\/+/, '').split('/');
    for (let i = 1; i < parts.length; i += 1) {
      const dir = parts.slice(0, i).join('/');
      if (!byPath.has(dir)) byPath.set(dir, { path: dir, kind: 'dir' });
    }
    byPath.set(parts.join('/'), { ...entry, path: parts.join('/') });
  }
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Builds the OCI layout tar (oci-layout, index.json, blobs/sha256/*) of a one-layer linux/amd64 image. */
export function buildOciImageTar(spec: OciImageSpec): OciImageTar {
  const layer = tarOf(layerEntries(spec.entries));
  const layerDigest = sha256(layer);
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: {
        Entrypoint: spec.entrypoint,
        ...(spec.cmd ? { Cmd: spec.cmd } : {}),
        Env: spec.env ?? ['PATH=/bin:/usr/bin:/sbin:/usr/sbin'],
        ...(spec.user ? { User: spec.user } : {}),
      },
      rootfs: { type: 'layers', diff_ids: [layerDigest] },
      history: [{ created_by: 'bpa-functions local/kubelet-node/oci-layout.ts' }],
    }),
  );
  const configDigest = sha256(config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        digest: configDigest,
        size: config.length,
      },
      layers: [
        { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layerDigest, size: layer.length },
      ],
    }),
  );
  const manifestDigest = sha256(manifest);
  const tag = spec.name.slice(spec.name.lastIndexOf(':') + 1);
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: manifestDigest,
          size: manifest.length,
          platform: { architecture: 'amd64', os: 'linux' },
          annotations: { 'io.containerd.image.name': spec.name, 'org.opencontainers.image.ref.name': tag },
        },
      ],
    }),
  );
  const blob = (digest: string, content: Buffer): LayerEntry => ({
    path: `blobs/sha256/${digest.slice('sha256:'.length)}`,
    kind: 'file',
    content,
  });
  const tar = tarOf([
    { path: 'blobs', kind: 'dir' },
    { path: 'blobs/sha256', kind: 'dir' },
    blob(configDigest, config),
    blob(layerDigest, layer),
    blob(manifestDigest, manifest),
    { path: 'index.json', kind: 'file', content: index },
    { path: 'oci-layout', kind: 'file', content: Buffer.from('{"imageLayoutVersion":"1.0.0"}') },
  ]);
  return { tar, manifestDigest };
}

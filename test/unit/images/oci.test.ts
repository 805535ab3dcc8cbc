// The OCI writer of `npm run images` (local/images/): tar layers byte-for-byte the same for the same
// entries, blobs named by the sha256 of their bytes, and manifest, config and index JSON in the
// shapes of the OCI image spec v1.1 (checked here with zod schemas of the fields the spec requires).
// The tar is read back by a reader written here; test/integration/images/images.test.ts unpacks
// real layers with GNU tar and runs an image's root.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { contentKey } from '../../../local/images/build.js';
import {
  BlobStore,
  imageConfig,
  imageManifest,
  mediaTypes,
  refAnnotations,
  writeArchive,
  type Descriptor,
} from '../../../local/images/oci.js';
import { writeTar, type TarEntry } from '../../../local/images/tar.js';
import { sortEntries } from '../../../local/images/tree.js';

const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/);
const descriptorSchema = z.object({
  mediaType: z.string(),
  digest,
  size: z.number().int().nonnegative(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const manifestSchema = z.strictObject({
  schemaVersion: z.literal(2),
  mediaType: z.literal(mediaTypes.manifest),
  config: descriptorSchema.extend({ mediaType: z.literal(mediaTypes.config) }),
  layers: z.array(descriptorSchema.extend({ mediaType: z.literal(mediaTypes.layer) })).min(1),
});
const configSchema = z.object({
  architecture: z.literal('amd64'),
  os: z.literal('linux'),
  config: z.object({
    User: z.string().regex(/^[1-9][0-9]*:[0-9]+$/),
    Entrypoint: z.array(z.string()).min(1),
    WorkingDir: z.string().startsWith('/'),
  }),
  rootfs: z.object({ type: z.literal('layers'), diff_ids: z.array(digest) }),
});
const indexSchema = z.strictObject({
  schemaVersion: z.literal(2),
  mediaType: z.literal(mediaTypes.index),
  manifests: z.array(descriptorSchema.extend({ mediaType: z.literal(mediaTypes.manifest) })),
});

interface ReadEntry {
  name: string;
  type: string;
  mode: number;
  uid: number;
  mtime: number;
  linkname: string;
  body: Buffer;
}

/** A minimal ustar + PAX reader: every header's checksum is verified. */
function readTar(bytes: Buffer): ReadEntry[] {
  const entries: ReadEntry[] = [];
  let offset = 0;
  let pax: Record<string, string> = {};
  const field = (h: Buffer, start: number, width: number) =>
    h
      .subarray(start, start + width)
      .toString('utf8')
      .replace(/\0.*$/s, '');
  while (offset + 512 <= bytes.length) {
    const h = bytes.subarray(offset, offset + 512);
    if (h.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : (h[i] ?? 0);
    expect(parseInt(field(h, 148, 8), 8)).toBe(sum);
    expect(field(h, 257, 6)).toBe('ustar');
    const size = parseInt(field(h, 124, 12), 8);
    const body = bytes.subarray(offset + 512, offset + 512 + size);
    offset += 512 + Math.ceil(size / 512) * 512;
    const type = field(h, 156, 1);
    if (type === 'x') {
      pax = Object.fromEntries(
        [...body.toString('utf8').matchAll(/\d+ ([^=]+)=([^\n]*)\n/g)].map((m) => [m[1] ?? '', m[2] ?? '']),
      );
      continue;
    }
    entries.push({
      name: pax.path ?? field(h, 0, 100),
      type,
      mode: parseInt(field(h, 100, 8), 8),
      uid: parseInt(field(h, 108, 8), 8),
      mtime: parseInt(field(h, 136, 12), 8),
      linkname: pax.linkpath ?? field(h, 157, 100),
      body: Buffer.from(body),
    });
    pax = {};
  }
  return entries;
}

const sha = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
const longName = `app/${'deep/'.repeat(30)}file.txt`;
const entries: TarEntry[] = [
  {
    type: 'file',
    path: 'b.txt',
    mode: 0o100644,
    uid: 0,
    gid: 0,
    size: 5,
    source: { bytes: Buffer.from('hello') },
  },
  { type: 'dir', path: 'app', mode: 0o40755, uid: 0, gid: 0 },
  { type: 'symlink', path: 'link', target: 'b.txt', uid: 0, gid: 0 },
  {
    type: 'file',
    path: longName,
    mode: 0o755,
    uid: 65532,
    gid: 65532,
    size: 3,
    source: { bytes: Buffer.from('abc') },
  },
  { type: 'hardlink', path: 'c.txt', target: 'b.txt', uid: 0, gid: 0 },
];

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'bpa-oci-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('tar layers', () => {
  it('writes sorted entries with numeric owners, a fixed mtime, PAX for long names, and the same bytes every time', () => {
    const first = writeTar(join(dir, 'a.tar'), sortEntries(entries));
    const second = writeTar(join(dir, 'b.tar'), sortEntries([...entries].reverse()));
    const bytes = readFileSync(join(dir, 'a.tar'));
    expect(first).toEqual(second);
    expect(readFileSync(join(dir, 'b.tar')).equals(bytes)).toBe(true);
    expect(first.sha256).toBe(sha(bytes).slice(7));
    expect(bytes.length % 512).toBe(0);
    const read = readTar(bytes);
    expect(read.map((e) => [e.name, e.type])).toEqual([
      ['app/', '5'],
      [longName, '0'],
      ['b.txt', '0'],
      ['c.txt', '1'],
      ['link', '2'],
    ]);
    expect(read.every((e) => e.mtime === 0)).toBe(true);
    expect(read.find((e) => e.name === longName)).toMatchObject({
      uid: 65532,
      mode: 0o755,
      body: Buffer.from('abc'),
    });
    expect(read.find((e) => e.name === 'link')?.linkname).toBe('b.txt');
    expect(read.find((e) => e.name === 'c.txt')?.linkname).toBe('b.txt');
  });

  it('keys a layer by its content: a changed byte or mode is another key', () => {
    const key = contentKey(entries);
    expect(contentKey([...entries])).toBe(key);
    const changed = entries.map((e) =>
      e.path === 'b.txt' ? { ...e, source: { bytes: Buffer.from('hellO') } } : e,
    );
    expect(contentKey(changed)).not.toBe(key);
    const mode = entries.map((e) => (e.type === 'dir' ? { ...e, mode: 0o40700 } : e));
    expect(contentKey(mode)).not.toBe(key);
  });
});

describe('OCI layout and archive', () => {
  const run = {
    User: '65532:65532',
    Entrypoint: ['/usr/local/bin/node'],
    Cmd: ['x.mjs'],
    Env: ['PATH=/usr/bin'],
    WorkingDir: '/app',
  };

  function image(store: BlobStore): { manifest: Descriptor; config: Descriptor; layers: Descriptor[] } {
    const layers = [store.addLayer(entries), store.addLayer([entries[0] as TarEntry])];
    const config = store.addJson(mediaTypes.config, imageConfig(run, layers));
    const manifest = store.addJson(mediaTypes.manifest, imageManifest(config, layers));
    return {
      manifest: { ...manifest, annotations: refAnnotations('localhost/bpa-functions/x:0.1.0') },
      config,
      layers,
    };
  }

  it('names every blob by the sha256 of its bytes, and writes manifest and config as the spec shapes them', () => {
    const store = new BlobStore(join(dir, 'layout'));
    const { manifest, config, layers } = image(store);
    for (const blob of [manifest, config, ...layers]) {
      const bytes = readFileSync(store.path(blob.digest));
      expect({ digest: sha(bytes), size: bytes.length }).toEqual({ digest: blob.digest, size: blob.size });
    }
    const parsedManifest = manifestSchema.parse(
      JSON.parse(readFileSync(store.path(manifest.digest), 'utf8')),
    );
    expect(parsedManifest.config.digest).toBe(config.digest);
    const parsedConfig = configSchema.parse(JSON.parse(readFileSync(store.path(config.digest), 'utf8')));
    // Uncompressed layers: each diff_id is the layer's own digest.
    expect(parsedConfig.rootfs.diff_ids).toEqual(parsedManifest.layers.map((l) => l.digest));
    expect(parsedConfig.config).toMatchObject({ User: '65532:65532', Entrypoint: ['/usr/local/bin/node'] });
    expect(JSON.parse(readFileSync(join(dir, 'layout', 'oci-layout'), 'utf8'))).toEqual({
      imageLayoutVersion: '1.0.0',
    });
    // The same inputs, another store: the same manifest digest.
    expect(image(new BlobStore(join(dir, 'other'))).manifest.digest).toBe(manifest.digest);
  });

  it('writes an oci-archive holding the image alone, named for containerd, every blob matching its name', () => {
    const store = new BlobStore(join(dir, 'layout'));
    const { manifest, config, layers } = image(store);
    writeFileSync(store.path(sha(Buffer.from('unrelated'))), 'unrelated');
    writeArchive(join(dir, 'x.tar'), store, manifest, [config, ...layers]);
    const read = readTar(readFileSync(join(dir, 'x.tar')));
    const files = new Map(read.filter((e) => e.type === '0').map((e) => [e.name, e.body]));
    const index = indexSchema.parse(JSON.parse(files.get('index.json')?.toString('utf8') ?? ''));
    expect(index.manifests).toEqual([manifest]);
    expect(index.manifests[0]?.annotations).toEqual({
      'io.containerd.image.name': 'localhost/bpa-functions/x:0.1.0',
      'org.opencontainers.image.ref.name': '0.1.0',
    });
    const blobs = [...files].filter(([name]) => name.startsWith('blobs/sha256/'));
    expect(blobs.map(([name]) => `sha256:${name.slice(13)}`).sort()).toEqual(
      [...new Set([manifest, config, ...layers].map((b) => b.digest))].sort(),
    );
    for (const [name, body] of blobs) expect(sha(body)).toBe(`sha256:${name.slice(13)}`);
    expect(files.get('oci-layout')?.toString('utf8')).toBe('{"imageLayoutVersion":"1.0.0"}');
  });
});

import { createReadStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { z } from 'zod';
import { BlobStore } from '../local/images/oci.js';
import { buildProjectImages } from '../local/images/main.js';
import type { BuiltImage } from '../local/images/build.js';
import type { BenchModule } from './module.js';

/**
 * The images `npm run images` ships (issue 24 item 8): each image's size (manifest, config and
 * its uncompressed layers, what a node stores after `ctr images import`), the layers the images
 * share, the distinct bytes of them all, and those distinct layers gzip-compressed (about what a
 * registry stores after a push). Built twice into a fresh folder: the first build assembles every
 * layer from the cached inputs (Debian roots, Node.js, node_modules, pause, Knative's binaries:
 * scripts/prereqs.sh builds those), the second is the content-hash cache's hit; the digests of
 * the two must be equal (the same sources give the same image).
 */
const MiB = 2 ** 20;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

const manifestSchema = z.object({ layers: z.array(z.object({ digest: z.string(), size: z.number() })) });

/** Bytes out of a gzip -6 of the file, nothing written. */
async function gzippedBytes(file: string): Promise<number> {
  let bytes = 0;
  await pipeline(
    createReadStream(file),
    createGzip({ level: 6 }),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        done();
      },
    }),
  );
  return bytes;
}

function timedBuild(out: string): { images: BuiltImage[]; seconds: number } {
  const started = performance.now();
  const { images } = buildProjectImages({
    out,
    component: join(out, 'component'),
    knative: true,
    log: () => undefined,
  });
  return { images, seconds: (performance.now() - started) / 1000 };
}

export const containerImagesBench: BenchModule = {
  name: 'container images (npm run images): sizes, a build from cached inputs and a cache hit',
  run: async (print) => {
    const out = mkdtempSync(join(tmpdir(), 'bpa-bench-images-'));
    try {
      const first = timedBuild(out);
      const second = timedBuild(out);
      const changed = first.images.filter((image, i) => second.images[i]?.digest !== image.digest);
      print(
        `${first.images.length} images built in ${first.seconds.toFixed(1)} s from cached inputs; ` +
          `again in ${second.seconds.toFixed(1)} s (${second.images.filter((i) => i.cached).length} from the cache); ` +
          (changed.length === 0
            ? 'same digests both times'
            : `digests differ: ${changed.map((i) => i.name).join(', ')}`),
      );
      const store = new BlobStore(join(out, 'layout'));
      const layersOf = (image: BuiltImage) =>
        manifestSchema.parse(JSON.parse(readFileSync(store.path(image.digest), 'utf8'))).layers;
      const users = new Map<string, { size: number; images: string[] }>();
      for (const image of first.images)
        for (const layer of layersOf(image)) {
          const entry = users.get(layer.digest) ?? { size: layer.size, images: [] };
          entry.images.push(image.name);
          users.set(layer.digest, entry);
        }
      const width = Math.max(...first.images.map((image) => image.name.length)) + 1;
      for (const image of first.images) {
        const own = layersOf(image)
          .filter((layer) => users.get(layer.digest)?.images.length === 1)
          .reduce((sum, layer) => sum + layer.size, 0);
        print(`  ${image.name.padEnd(width)} ${mib(image.bytes).padStart(10)}  (its own layers ${mib(own)})`);
      }
      const shared = [...users.values()].filter((u) => u.images.length > 1);
      for (const layer of shared.sort((a, b) => b.size - a.size).slice(0, 3))
        print(`  a layer of ${mib(layer.size)} shared by ${layer.images.length} images`);
      const distinct = [...users.values()].reduce((sum, u) => sum + u.size, 0);
      let gzipped = 0;
      for (const digest of users.keys()) gzipped += await gzippedBytes(store.path(digest));
      const total = first.images.reduce((sum, image) => sum + image.bytes, 0);
      print(
        `all ${first.images.length} images: ${mib(total)} added up, ${mib(distinct)} distinct layers ` +
          `(what one node stores), ${mib(gzipped)} gzip-compressed (about what a registry stores)`,
      );
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  },
};

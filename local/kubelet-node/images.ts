/**
 * Images on the node: nothing is ever pulled. An OCI layout tar is imported with
 * `ctr -n k8s.io images import` inside the node's mount namespace (ctr's FIFOs live under the node's
 * /run/containerd); pods name it with imagePullPolicy Never or IfNotPresent. The sandbox image is
 * built here from the pause binary (engines/build.sh node) and pinned in containerd's config.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { buildOciImageTar } from './oci-layout.js';
import { containerdSocket } from './config.js';

const run = promisify(execFile);

const indexSchema = z.object({
  manifests: z.array(z.object({ annotations: z.record(z.string(), z.string()).optional() })),
});

/** The sandbox image's reference: the pause binary of the pinned Kubernetes version. */
export const pauseImageName = (kubernetesVersion: string) => `localhost/bpa/pause:${kubernetesVersion}`;

/** Writes the pause image's OCI layout tar (one static binary, /pause, run as 65535) into `dir`. */
export function writePauseImage(pauseBinary: string, kubernetesVersion: string, dir: string): string {
  const image = buildOciImageTar({
    name: pauseImageName(kubernetesVersion),
    entries: [{ path: 'pause', kind: 'file', content: readFileSync(pauseBinary), mode: 0o755 }],
    entrypoint: ['/pause'],
    user: '65535:65535',
  });
  const path = join(dir, 'pause.oci.tar');
  writeFileSync(path, image.tar);
  return path;
}

/**
 * The repository of the image an OCI layout tar names (`io.containerd.image.name` of its index,
 * without the tag), when it names exactly one; read with GNU tar.
 */
async function archiveRepository(tarPath: string): Promise<string | undefined> {
  const { stdout } = await run('tar', ['-xOf', tarPath, 'index.json'], { maxBuffer: 4 * 1024 * 1024 }).catch(
    () => ({ stdout: '' }),
  );
  const index = indexSchema.safeParse(stdout ? JSON.parse(stdout) : undefined);
  if (!index.success) return undefined;
  const names = new Set(
    index.data.manifests.flatMap((m) => {
      const name = m.annotations?.['io.containerd.image.name'];
      return name ? [name.replace(/(@[^@]*|:[^:/]*)$/, '')] : [];
    }),
  );
  return names.size === 1 ? [...names][0] : undefined;
}

/**
 * Imports an OCI layout (or docker-archive) tar into the node's k8s.io namespace; returns ctr's
 * output. A layout naming one repository is also named `<repository>@<manifest digest>`
 * (`--base-name` with `--digests`, imported by ctr itself): the CRI resolves a pod's image only by a name containerd
 * holds, and the manifests pin images by digest (manifests/components/images-local), which a
 * tag-only import leaves to a pull (that fails: nothing is pulled here).
 */
export async function importImage(nsPid: number, ctr: string, tarPath: string): Promise<string> {
  const repository = await archiveRepository(tarPath);
  const { stdout } = await run(
    'nsenter',
    [
      '--target',
      String(nsPid),
      '--mount',
      '--net',
      '--',
      ctr,
      '--address',
      containerdSocket,
      '-n',
      'k8s.io',
      'images',
      'import',
      // `--local`: the transfer service's --digests names the archive's index, not each manifest.
      ...(repository ? ['--local', '--base-name', repository, '--digests'] : []),
      tarPath,
    ],
    { maxBuffer: 4 * 1024 * 1024 },
  );
  return stdout;
}

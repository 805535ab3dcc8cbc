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
import { buildOciImageTar } from './oci-layout.js';
import { containerdSocket } from './config.js';

const run = promisify(execFile);

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

/** Imports an OCI layout (or docker-archive) tar into the node's k8s.io namespace; returns ctr's output. */
export async function importImage(nsPid: number, ctr: string, tarPath: string): Promise<string> {
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
      tarPath,
    ],
    { maxBuffer: 4 * 1024 * 1024 },
  );
  return stdout;
}

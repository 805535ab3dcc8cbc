/**
 * A test image for the real node (its tests and bench): the machine's busybox (Debian's, dynamically linked) and
 * the libraries it loads, with one symlink per applet in /bin, and the machine's openssl (with its
 * libraries), as a reproducible OCI layout tar
 * (local/kubelet-node/oci-layout.ts: the same machine gives the same digest). No registry: the
 * node imports it (`ctr -n k8s.io images import`) and pods name it with imagePullPolicy Never.
 * Debian's busybox-static is not used: its wget segfaults on these machines.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOciImageTar, type LayerEntry } from './oci-layout.js';

export const busyboxImage = 'localhost/bpa/test-busybox:1';

/** The shared libraries `ldd` names for a binary (the loader included), by the path it loads them from. */
export function sharedLibraries(binary: string): string[] {
  const out = execFileSync('ldd', [binary], { encoding: 'utf8' });
  const paths: string[] = [];
  for (const line of out.split('\n')) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (match?.[1]) paths.push(match[1]);
  }
  return paths;
}

/**
 * The busybox image's files: the machine's busybox with one symlink per applet in /bin, the
 * extra binaries, the libraries they load, /tmp and an /etc/passwd. Also the base of the suites'
 * test images (local/images/test-images.ts), so both writers take the same files.
 */
export function busyboxEntries(
  binary = '/usr/bin/busybox',
  // A TLS client kube-apiserver accepts: busybox wget's own TLS fails its handshake (alert 40).
  extraBinaries = ['/usr/bin/openssl'],
): LayerEntry[] {
  const applets = execFileSync(binary, ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  return [
    { path: 'bin/busybox', kind: 'file', content: readFileSync(binary), mode: 0o755 },
    ...applets
      .filter((applet) => applet !== 'busybox')
      .map((applet): LayerEntry => ({ path: `bin/${applet}`, kind: 'symlink', target: 'busybox' })),
    ...extraBinaries.map((file): LayerEntry => ({
      path: file.slice(1),
      kind: 'file',
      content: readFileSync(file),
      mode: 0o755,
    })),
    ...[binary, ...extraBinaries].flatMap(sharedLibraries).map((lib): LayerEntry => ({
      path: lib.slice(1),
      kind: 'file',
      content: readFileSync(realpathSync(lib)),
      mode: 0o755,
    })),
    { path: 'tmp', kind: 'dir', mode: 0o1777 },
    {
      path: 'etc/passwd',
      kind: 'file',
      content: Buffer.from('root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n'),
    },
  ];
}

/** Writes the image's tar into `dir`; returns its path and manifest digest. */
export function writeBusyboxImage(
  dir: string,
  binary = '/usr/bin/busybox',
  extraBinaries = ['/usr/bin/openssl'],
): { path: string; digest: string } {
  const entries = busyboxEntries(binary, extraBinaries);
  const image = buildOciImageTar({ name: busyboxImage, entries, entrypoint: ['/bin/sh'] });
  const path = join(dir, 'test-busybox.oci.tar');
  writeFileSync(path, image.tar);
  return { path, digest: image.manifestDigest };
}

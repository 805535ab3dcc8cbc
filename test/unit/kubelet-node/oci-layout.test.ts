/**
 * The OCI layout tars the real node imports (local/kubelet-node/oci-layout.ts): the same files give
 * the same bytes and digest, every blob is named by its content's digest, and the index names the
 * image as containerd stores it. GNU tar reads what it writes (a real reader, not our own).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from '@jest/globals';
import { buildOciImageTar, type OciImageSpec } from '../../../local/kubelet-node/oci-layout.js';

const scratch = mkdtempSync(join(tmpdir(), 'oci-layout-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const spec = (content: string): OciImageSpec => ({
  name: 'localhost/bpa/test:1',
  entrypoint: ['/bin/app'],
  entries: [
    { path: 'bin/app', kind: 'file', content: Buffer.from(content), mode: 0o755 },
    { path: 'bin/alias', kind: 'symlink', target: 'app' },
    { path: `deep/${'d'.repeat(90)}/${'f'.repeat(60)}`, kind: 'file', content: Buffer.from('long path') },
  ],
});

const untar = (tar: Buffer, name: string) => {
  const dir = join(scratch, name);
  execFileSync('mkdir', ['-p', dir]);
  writeFileSync(join(dir, 'image.tar'), tar);
  execFileSync('tar', ['-xf', 'image.tar'], { cwd: dir });
  return dir;
};
const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

it('gives the same bytes for the same files, and another digest when a byte changes', () => {
  const first = buildOciImageTar(spec('#!/bin/sh\necho one\n'));
  const second = buildOciImageTar(spec('#!/bin/sh\necho one\n'));
  const other = buildOciImageTar(spec('#!/bin/sh\necho two\n'));
  expect(second.tar.equals(first.tar)).toBe(true);
  expect(second.manifestDigest).toBe(first.manifestDigest);
  expect(other.manifestDigest).not.toBe(first.manifestDigest);
});

it('writes a layout GNU tar reads: blobs named by their digest, the name in the index, the files in the layer', () => {
  const image = buildOciImageTar(spec('payload'));
  const dir = untar(image.tar, 'layout');
  expect(JSON.parse(readFileSync(join(dir, 'oci-layout'), 'utf8'))).toEqual({ imageLayoutVersion: '1.0.0' });
  const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as {
    manifests: Array<{ digest: string; annotations: Record<string, string> }>;
  };
  const [entry] = index.manifests;
  expect(entry?.digest).toBe(image.manifestDigest);
  expect(entry?.annotations['io.containerd.image.name']).toBe('localhost/bpa/test:1');
  const blob = (digest: string) => readFileSync(join(dir, 'blobs', 'sha256', digest.replace('sha256:', '')));
  const manifestBytes = blob(image.manifestDigest);
  expect(`sha256:${sha(manifestBytes)}`).toBe(image.manifestDigest);
  const manifest = JSON.parse(manifestBytes.toString()) as {
    config: { digest: string };
    layers: Array<{ digest: string }>;
  };
  const config = JSON.parse(blob(manifest.config.digest).toString()) as {
    config: { Entrypoint: string[] };
    rootfs: { diff_ids: string[] };
  };
  expect(config.config.Entrypoint).toEqual(['/bin/app']);
  const layerDigest = manifest.layers[0]?.digest ?? '';
  expect(config.rootfs.diff_ids).toEqual([layerDigest]);
  const layer = blob(layerDigest);
  expect(`sha256:${sha(layer)}`).toBe(layerDigest);
  const rootfs = untar(layer, 'rootfs');
  expect(readFileSync(join(rootfs, 'bin', 'app'), 'utf8')).toBe('payload');
  expect(execFileSync('readlink', [join(rootfs, 'bin', 'alias')], { encoding: 'utf8' }).trim()).toBe('app');
  expect(readFileSync(join(rootfs, 'deep', 'd'.repeat(90), 'f'.repeat(60)), 'utf8')).toBe('long path');
  const listing = execFileSync('tar', ['-tvf', join(rootfs, 'image.tar')], { encoding: 'utf8' });
  expect(listing).toMatch(/-rwxr-xr-x 0\/0 +7 1970-01-01 00:00 bin\/app/);
});

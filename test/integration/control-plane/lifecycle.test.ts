/**
 * startControlPlane owns its processes and files: stop leaves neither behind, and a start that
 * fails says which process failed and why (its last log lines), also without leftovers.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { BpaError } from '../../../shared/errors.js';
import { locateBinaries, startControlPlane } from '../../../local/control-plane/index.js';
import { isAlive } from '../../support/processes.js';

let scratch = '';
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'lifecycle-'));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

it('starts a second, independent control plane and stops it without leftovers', async () => {
  const kubeconfigPath = join(scratch, 'kubeconfig');
  const tempRoot = await mkdtemp(join(scratch, 'root-'));
  const controlPlane = await startControlPlane({ kubeconfigPath, handleSignals: false, tempRoot });
  const pids = [controlPlane.processes.etcd.pid, controlPlane.processes.kubeApiserver.pid];
  try {
    expect(controlPlane.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(controlPlane.server).not.toBe(process.env.BPA_TEST_SERVER);
    expect(pids.every(isAlive)).toBe(true);
    const namespaces = await controlPlane.kubeConfig.makeApiClient(CoreV1Api).listNamespace();
    expect(namespaces.items.map((ns) => ns.metadata?.name)).toContain('kube-system');
    expect(existsSync(kubeconfigPath)).toBe(true);
    // Its files are where the caller asked (the failure case below relies on it).
    expect((await readdir(tempRoot)).sort()).toEqual(
      [basename(controlPlane.workDir), basename(controlPlane.etcdDataDir)].sort(),
    );
  } finally {
    await controlPlane.stop();
  }
  expect(pids.filter(isAlive)).toEqual([]);
  expect(existsSync(controlPlane.workDir)).toBe(false);
  expect(existsSync(controlPlane.etcdDataDir)).toBe(false);
  // A kubeconfig written where the caller asked belongs to the caller.
  expect(existsSync(kubeconfigPath)).toBe(true);
  await controlPlane.stop();
});

it('reports the last log lines of a kube-apiserver that exits at start, and cleans up', async () => {
  const real = await locateBinaries();
  const broken = join(scratch, 'kube-apiserver');
  await writeFile(broken, '#!/bin/sh\necho "E0101 flag provided but not defined: --bogus" >&2\nexit 3\n');
  await chmod(broken, 0o755);
  // A directory no other suite's control plane uses: the global temp directory changes while
  // suites run in parallel.
  const tempRoot = await mkdtemp(join(scratch, 'root-'));

  const failure = await startControlPlane({
    binaries: { ...real, kubeApiserver: broken },
    handleSignals: false,
    tempRoot,
  }).then(
    () => undefined,
    (error: unknown) => error,
  );

  expect(failure).toBeInstanceOf(BpaError);
  expect((failure as BpaError).reason).toBe('ControlPlaneStartFailed');
  expect((failure as BpaError).message).toContain('kube-apiserver exited (code 3');
  expect((failure as BpaError).message).toContain('flag provided but not defined: --bogus');
  // Both the work directory and etcd's data directory were made here, and both are gone.
  expect(await readdir(tempRoot)).toEqual([]);
});

it('reports a binary that cannot be run at all', async () => {
  const real = await locateBinaries();
  const failure = await startControlPlane({
    binaries: { ...real, etcd: join(scratch, 'no-such-etcd') },
    handleSignals: false,
  }).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect((failure as BpaError).reason).toBe('ControlPlaneStartFailed');
  expect((failure as BpaError).message).toMatch(/etcd exited[\s\S]*ENOENT/);
});

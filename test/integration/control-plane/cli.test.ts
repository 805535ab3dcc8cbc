/**
 * `bpa control-plane` for people: it prints where the API server and the kubeconfig are, the
 * server answers kubectl with the CRDs installed, and a signal stops everything.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { controlPlaneCommand } from '../../../cli/commands/control-plane.js';
import { UsageError } from '../../../cli/command.js';
import { isAlive, until } from '../../support/processes.js';

const run = promisify(execFile);

function capture() {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: { stdout: (text: string) => (out.stdout += text), stderr: (text: string) => (out.stderr += text) },
  };
}

/** etcd and kube-apiserver processes that this process started. */
async function controlPlaneChildren(): Promise<number[]> {
  const found = await run('pgrep', ['-P', String(process.pid), '^(etcd|kube-apiserver)$']).catch(() => ({
    stdout: '',
  }));
  return found.stdout.split('\n').filter(Boolean).map(Number);
}

let scratch = '';
const savedEnv = { ...process.env };
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'cli-control-plane-'));
  // The command's defaults, without the test run's Knative CRDs (they only cost time here).
  delete process.env.KNATIVE_CRDS_DIR;
  delete process.env.METAL3_CRDS_DIR;
  delete process.env.CI;
});
afterAll(async () => {
  process.env = savedEnv;
  await rm(scratch, { recursive: true, force: true });
});

it('documents its option and the binary overrides, and refuses unknown options', async () => {
  expect(controlPlaneCommand.usage).toContain('Usage: bpa control-plane [--kubeconfig-out FILE]');
  expect(controlPlaneCommand.usage).toContain('KUBEBUILDER_ASSETS');
  const { io } = capture();
  await expect(controlPlaneCommand.run(['--port', '6443'], io)).rejects.toThrow(UsageError);
});

it('runs until SIGINT with the CRDs installed, then stops cleanly', async () => {
  const kubeconfigPath = join(scratch, 'kubeconfig');
  // In band, this process also parents the run's own control plane: tell the two apart.
  const existing = new Set(await controlPlaneChildren());
  const { out, io } = capture();
  const exitCode = controlPlaneCommand.run(['--kubeconfig-out', kubeconfigPath], io);
  await until(() => out.stdout.includes('Ctrl-C stops it.'), 'the control plane to be up');

  expect(out.stdout).toMatch(/^kube-apiserver {2}https:\/\/127\.0\.0\.1:\d+$/m);
  expect(out.stdout).toContain(`kubeconfig      ${kubeconfigPath}`);
  expect(out.stdout).toContain(`Try: kubectl --kubeconfig ${kubeconfigPath} get bpa -A`);
  expect(out.stdout).toContain("metal3.io BareMetalHost: the project's minimal CRD");

  const crds = await run('kubectl', [
    '--kubeconfig',
    kubeconfigPath,
    '--cache-dir',
    join(scratch, 'cache'),
    'get',
    'crd',
    '-o',
    'name',
  ]);
  expect(crds.stdout.trim().split('\n').sort()).toEqual([
    'customresourcedefinition.apiextensions.k8s.io/baremetalhosts.metal3.io',
    'customresourcedefinition.apiextensions.k8s.io/images.bpa.akraino.org',
    'customresourcedefinition.apiextensions.k8s.io/provisionings.bpa.akraino.org',
    'customresourcedefinition.apiextensions.k8s.io/softwares.bpa.akraino.org',
  ]);
  const pids = (await controlPlaneChildren()).filter((pid) => !existing.has(pid));
  expect(pids).toHaveLength(2);

  process.emit('SIGINT', 'SIGINT');
  expect(await exitCode).toBe(0);
  expect(out.stderr).toContain('SIGINT: stopping');
  expect(pids.filter(isAlive)).toEqual([]);
  expect(existsSync(kubeconfigPath)).toBe(true);
});

/**
 * `bpa cluster` as a real process: the one-machine cluster (real etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler; the node, OUR IMITATION of a kubelet) until SIGTERM.
 * Needs root.
 */
import { describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../local/control-plane/repo-root.js';
import { builtCli } from './support/built-cli.js';
import { ProcessOutput } from './support/process-output.js';

const run = promisify(execFile);

function isolatedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env))
    if (name === 'KUBECONFIG' || name.startsWith('BPA_TEST_')) delete env[name];
  return env;
}

describe('bpa cluster (a real process)', () => {
  it('runs the cluster with a Ready node, runs a pod on it, and removes everything on SIGTERM', async () => {
    const cli = await builtCli();
    const dir = mkdtempSync(join(tmpdir(), 'bpa-cluster-e2e-'));
    const kubeconfig = join(dir, 'kubeconfig');
    const kubectl = (...args: string[]) =>
      run('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args], {
        timeout: 60_000,
      });
    const child = spawn(process.execPath, [cli, 'cluster', '--kubeconfig-out', kubeconfig], {
      cwd: repoRoot(),
      env: isolatedEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = new ProcessOutput(child);
    const exited = once(child, 'exit');
    let netnsPrefix = '';
    try {
      await output.waitFor(/^Ctrl-C stops it\.$/m, 240_000);
      expect(output.stdout).toMatch(/^bpa cluster: ready in \d+\.\d s$/m);
      expect(output.stdout).toContain(`kubeconfig               ${kubeconfig}`);
      expect(output.stdout).toMatch(/kube-scheduler\s+pid \d+/);
      const slot = /pods in 10\.244\.(\d+)\.0\/24/.exec(output.stdout)?.[1];
      expect(slot).toBeDefined();
      netnsPrefix = `bpa${slot}-`;

      const ready = await kubectl(
        'get',
        'node',
        'bpa-node',
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      );
      expect(ready.stdout).toBe('True');
      // The ServiceAccount admission plugin refuses a pod until kube-controller-manager has made
      // the namespace's `default` ServiceAccount (a fresh-clone CI run failed here on a new machine).
      let serviceAccount = false;
      for (let i = 0; i < 120 && !serviceAccount; i++) {
        serviceAccount = await kubectl('get', 'serviceaccount', 'default', '-o', 'name').then(
          () => true,
          () => false,
        );
        if (!serviceAccount) await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(serviceAccount).toBe(true);
      // A pod of the KUD image (mapped to a local command) runs on the node and ends Succeeded.
      await kubectl(
        'run',
        'hello',
        '--restart=Never',
        '--image=github.com/onap/multicloud-k8s:latest',
        '--command',
        '--',
        '/bin/sh',
        '-c',
        'echo hello from the node',
      );
      let phase = '';
      for (let i = 0; i < 120 && phase !== 'Succeeded'; i++) {
        phase = (await kubectl('get', 'pod', 'hello', '-o', 'jsonpath={.status.phase}')).stdout;
        if (phase !== 'Succeeded') await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(phase).toBe('Succeeded');
      expect((await kubectl('logs', 'hello')).stdout).toBe('hello from the node\n');
    } finally {
      child.kill('SIGTERM');
    }
    const [code] = (await exited) as [number | null];
    expect(output.stderr).toContain('SIGTERM: stopping');
    expect(code).toBe(0);
    // Nothing of the node is left, and the API server is down.
    const { stdout: namespaces } = await run('ip', ['netns', 'list']);
    expect(namespaces.split('\n').filter((line) => netnsPrefix && line.startsWith(netnsPrefix))).toEqual([]);
    await expect(
      run('kubectl', ['--kubeconfig', kubeconfig, 'get', 'ns', '--request-timeout=3s']),
    ).rejects.toThrow();
    rmSync(dir, { recursive: true, force: true });
  }, 300_000);

  it('--help says what it runs and what it needs', async () => {
    const { stdout } = await run(process.execPath, [await builtCli(), 'cluster', '--help']);
    expect(stdout).toMatch(/^Usage: bpa cluster \[--kubeconfig-out FILE\]/);
    expect(stdout).toContain('kube-controller-manager and kube-scheduler');
    expect(stdout).toContain('Needs root and Linux network namespaces');
    const { stdout: top } = await run(process.execPath, [await builtCli(), '--help']);
    expect(top).toMatch(/^ {2}cluster\s+the one-machine cluster/m);
  });
});

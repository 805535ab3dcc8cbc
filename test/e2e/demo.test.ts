import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { repoRoot } from '../../local/control-plane/repo-root.js';
import { freeLoopbackPort } from '../../local/control-plane/free-port.js';
import { builtCli } from './support/built-cli.js';
import { ProcessOutput } from './support/process-output.js';

/** Env of the child: no test cluster, so the demo starts its own control plane as on a fresh machine. */
function isolatedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const name of Object.keys(env))
    if (name === 'KUBECONFIG' || name.startsWith('BPA_TEST_')) delete env[name];
  return env;
}

describe('bpa demo (what npm start runs)', () => {
  it('runs a Provisioning and a Software through the whole chain against the simulated lab and exits 0', async () => {
    const cli = await builtCli();
    const child = spawn(process.execPath, [cli, 'demo', '--port', String(await freeLoopbackPort())], {
      cwd: repoRoot(),
      env: isolatedEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = new ProcessOutput(child);
    const [code] = (await once(child, 'exit')) as [number | null];
    const text = output.stdout;
    if (code !== 0)
      throw new Error(`bpa demo exited ${code}\n--- stdout ---\n${text}\n--- stderr ---\n${output.stderr}`);
    expect(code).toBe(0);
    // It says what is simulated.
    expect(text).toMatch(/simulated/i);
    expect(text).toMatch(/simulated Job controller/);
    // Every step and every Provisioning condition, as it happened.
    for (const step of ['[1/5]', '[2/5]', '[3/5]', '[4/5]', '[5/5] Summary']) expect(text).toContain(step);
    for (const type of ['HostsResolved', 'InventoryRendered', 'JobLaunched', 'KudInstalled', 'Ready'])
      expect(text).toMatch(new RegExp(`✓ ${type}=True`));
    expect(text).toMatch(/✓ Installed=True/);
    // Both IP sources of the lab, and the IP ConfigMap.
    expect(text).toMatch(/master-1\s+master\s+52:54:00:b1:0a:01\s+127\.0\.0\.11\s+dhcp-leases/);
    expect(text).toMatch(/worker-1\s+worker\s+52:54:00:b1:0a:03\s+127\.0\.0\.13\s+host-nics/);
    expect(text).toContain(
      'MASTER_master-1=127.0.0.11 MASTER_master-2=127.0.0.12 WORKER_worker-1=127.0.0.13',
    );
    // Per-host install results.
    expect(text).toMatch(/master-1\s+127\.0\.0\.11\s+curl htop\s+0\s/);
    expect(text).toMatch(/worker-1\s+127\.0\.0\.13\s+curl jq=1\.6-2\.1\s+0\s/);
    expect(text).toMatch(/software edge-demo-tools: installed on 3\/3 hosts/);
    // Event deliveries, one line each; no JSON log lines on the console.
    expect(text).toMatch(/event hosts\.resolved → inventory-render-hosts-resolved\s+200/);
    expect(text.split('\n').filter((line) => line.trimStart().startsWith('{"'))).toEqual([]);
  }, 600_000);
});

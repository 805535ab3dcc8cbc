import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { repoRoot } from '../local/control-plane/index.js';
import type { BenchModule } from './module.js';

/**
 * CLI start-up: `bpa --help` and `bpa render` of a small cluster (two nodes, hosts and leases
 * files from test/fixtures/render/), from spawn to exit, beside a bare `node -e ''`. The three
 * are interleaved over 10 rounds (a shared machine's speed drifts) and the medians compared.
 * Goal: each within 2.5x the bare node (commands load their modules only when they run,
 * cli/main.ts; the CLI is bundled, scripts/bundle.mjs).
 */
const rounds = 10;

function timeSpawn(args: string[], cwd: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => {
      const ms = performance.now() - started;
      if (code === 0) resolve(ms);
      else reject(new Error(`node ${args.join(' ')} exited with ${code}`));
    });
  });
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

export const cliBench: BenchModule = {
  name: 'CLI: start-up of bpa --help and bpa render',
  async run(print) {
    const root = repoRoot();
    if (!existsSync(join(root, 'dist/bundle/cli/main.mjs'))) {
      print('skipped: dist/bundle/cli/main.mjs missing (run npm run build)');
      return;
    }
    const fixture = (...parts: string[]) => join(root, 'test/fixtures/render', ...parts);
    const cases: { label: string; args: string[] }[] = [
      { label: "node -e ''", args: ['-e', ''] },
      { label: 'bpa --help', args: ['bin/bpa.js', '--help'] },
      {
        label: 'bpa render (2 nodes)',
        args: [
          'bin/bpa.js',
          'render',
          '--provisioning',
          fixture('provisioning', 'masters-and-workers.yaml'),
          '--hosts',
          fixture('hosts', 'hosts.yaml'),
          '--leases',
          fixture('leases', 'dhcpd.leases'),
        ],
      },
    ];
    const samples = cases.map(() => [] as number[]);
    for (let round = 0; round < rounds; round++)
      for (const [index, { args }] of cases.entries()) samples[index]!.push(await timeSpawn(args, root));
    const floor = median(samples[0]!);
    print(
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; medians of ${rounds} interleaved rounds`,
    );
    for (const [index, { label }] of cases.entries()) {
      const ms = median(samples[index]!);
      const ratio = index === 0 ? '' : `  ${(ms / floor).toFixed(2)}x the bare node (goal <= 2.5x)`;
      print(`  ${label.padEnd(22)} ${`${Math.round(ms)} ms`.padStart(7)}${ratio}`);
    }
  },
};

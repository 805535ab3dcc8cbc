import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { softwareInstallConfigSchema } from '../functions/software-install/config.js';
import { planInstall } from '../functions/software-install/ssh/install.js';
import { runInstall } from '../test/support/run-install.js';
import type { PlannedHostInstall } from '../functions/software-install/ssh/install.js';
import { runSshCommand } from '../functions/software-install/ssh/session.js';
import { startSshHosts } from '../test/support/sshd.js';
import type { SshHosts } from '../test/support/sshd.js';
import type { BenchModule } from './module.js';

/**
 * Software fan-out against 20 real OpenSSH sshd hosts on 127.0.0.2-21 whose command takes one
 * second (the recorder sleeps instead of running apt): total wall time with the default
 * concurrency, with all 20 at once and one at a time, against a single host's time.
 * Goal: the default within 2x of a single host's time. Also connect + command latency of one
 * session to a host that answers at once. Needs root and openssh-server.
 */
const hostCount = 20;
const commandSeconds = 1;
/** What software-install runs with when SSH_CONCURRENCY is not set: the config schema's default. */
const defaultConcurrency = softwareInstallConfigSchema.parse({}).SSH_CONCURRENCY;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};
const ms = (value: number) => `${Math.round(value)} ms`;

async function fanOut(lab: SshHosts, hosts: PlannedHostInstall[], concurrency: number): Promise<number> {
  const started = performance.now();
  const results = await runInstall({
    hosts,
    port: lab.port,
    username: lab.username,
    privateKey: lab.privateKey,
    hostKeys: { mode: 'known-hosts', knownHosts: lab.knownHosts() },
    connectTimeoutMs: 30000,
    commandTimeoutMs: 60000,
    concurrency,
  });
  const elapsed = performance.now() - started;
  const failed = results.filter((r) => r.error);
  if (failed.length > 0) {
    throw new Error(
      `fan-out: ${failed.length} hosts failed, e.g. ${failed[0]?.ip}: ${failed[0]?.error?.message}`,
    );
  }
  return elapsed;
}

export const sshFanoutBench: BenchModule = {
  name: `software fan-out: ${hostCount} real sshd hosts, ${commandSeconds}-second command`,
  async run(print) {
    if (process.getuid?.() !== 0) {
      print('skipped: needs root to run sshd');
      return;
    }
    const lab = await startSshHosts({
      count: hostCount,
      behaviours: Array.from(
        { length: hostCount },
        () => ({ kind: 'slow', seconds: commandSeconds }) as const,
      ),
    });
    try {
      const planned = planInstall(
        lab.hosts.map((host, index) => ({
          node: `node-${index}`,
          ip: host.ip,
          packages: [{ name: 'htop' }],
        })),
        lab.username,
      );
      // Warm up once (page cache, sshd re-exec) before measuring.
      await fanOut(lab, planned.slice(0, 1), 1);

      const single = median([
        await fanOut(lab, planned.slice(0, 1), 1),
        await fanOut(lab, planned.slice(1, 2), 1),
        await fanOut(lab, planned.slice(2, 3), 1),
      ]);
      const atDefault = await fanOut(lab, planned, defaultConcurrency);
      const allAtOnce = await fanOut(lab, planned, hostCount);
      const oneAtATime = await fanOut(lab, planned, 1);

      print(`single host (median of 3):          ${ms(single)}`);
      print(
        `${hostCount} hosts, default concurrency ${defaultConcurrency}: ${ms(atDefault)} (${(atDefault / single).toFixed(2)}x single; goal <= 2x: ${atDefault <= 2 * single ? 'met' : 'NOT met'})`,
      );
      print(
        `${hostCount} hosts, concurrency ${hostCount}:        ${ms(allAtOnce)} (${(allAtOnce / single).toFixed(2)}x single)`,
      );
      print(
        `${hostCount} hosts, one at a time:           ${ms(oneAtATime)} (${(oneAtATime / atDefault).toFixed(1)}x the default)`,
      );

      const host = lab.hosts[0]!;
      await lab.setBehaviour(host, { kind: 'succeed' });
      const latencies: number[] = [];
      for (let i = 0; i < 15; i++) {
        const result = await runSshCommand(
          {
            host: host.ip,
            port: lab.port,
            username: lab.username,
            privateKey: lab.privateKey,
            hostKeyPolicy: { mode: 'known-hosts', knownHosts: lab.knownHosts() },
            connectTimeoutMs: 30000,
            commandTimeoutMs: 30000,
          },
          planned[0]!.command,
        );
        if (result.error) throw new Error(`latency run failed: ${result.error.message}`);
        latencies.push(result.durationMs);
      }
      const sorted = [...latencies].sort((a, b) => a - b);
      print(
        `connect + command + exit status, instant command (15 sessions): median ${ms(median(latencies))}, min ${ms(sorted[0]!)}, max ${ms(sorted.at(-1)!)}`,
      );
      print(
        `load average at the end: ${loadavg()[0]?.toFixed(2)} (2 cores shared; figures are noisy under load)`,
      );
    } finally {
      await lab.stopAll();
    }
  },
};

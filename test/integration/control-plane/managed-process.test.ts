/**
 * etcd and kube-apiserver must not outlive a runner that is killed hard (SIGKILL runs no exit
 * handler): startManagedProcess gives each child a watchdog. Shown with `sleep` as the child of
 * a real Node process that is then SIGKILLed, and with a normal exit that leaves nothing behind.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from '@jest/globals';
import { repoRoot } from '../../../local/control-plane/repo-root.js';
import { builtCli } from '../../e2e/support/built-cli.js';
import { isAlive, until } from '../../support/processes.js';

const scratch = mkdtempSync(join(tmpdir(), 'managed-process-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A Node process that starts `sleep 300` as a managed process and prints the pids. */
async function runnerWithSleeper(then: 'wait' | 'stop') {
  await builtCli(); // dist/ current
  const module = pathToFileURL(join(repoRoot(), 'dist', 'local', 'control-plane', 'managed-process.js')).href;
  const script = join(scratch, `runner-${then}.mjs`);
  writeFileSync(
    script,
    `import { startManagedProcess } from ${JSON.stringify(module)};
const sleeper = startManagedProcess('sleeper', 'sleep', ['300'], ${JSON.stringify(join(scratch, `${then}.log`))});
console.log(JSON.stringify({ runner: process.pid, sleeper: sleeper.pid }));
${then === 'stop' ? 'await sleeper.stop(2000); console.log("stopped");' : 'setInterval(() => {}, 1000);'}
`,
  );
  const runner = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => runner.once('exit', () => resolve()));
  let out = '';
  runner.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await until(() => out.includes('\n'), 'the runner to start its child');
  const pids = JSON.parse(out.split('\n')[0]!) as { runner: number; sleeper: number };
  return { runner, pids, exited, output: () => out };
}

/** Watchdog shells still running for a child pid. */
const watchdogsOf = async (pid: number) => {
  const { execFile } = await import('node:child_process');
  return new Promise<string>((resolve) =>
    execFile('pgrep', ['-f', `bpa-watchdog [0-9]+ ${pid}$`], (_error, stdout) => resolve(stdout.trim())),
  );
};

it('kills the child when the runner dies of SIGKILL', async () => {
  const { runner, pids } = await runnerWithSleeper('wait');
  expect(isAlive(pids.sleeper)).toBe(true);
  expect(await watchdogsOf(pids.sleeper)).not.toBe('');

  runner.kill('SIGKILL');
  await until(() => !isAlive(pids.runner), 'the runner to die');
  // The watchdog polls every second and sends SIGTERM, which `sleep` dies of.
  await until(() => !isAlive(pids.sleeper), 'the orphaned child to be killed', 10_000);
}, 30_000);

it('leaves no watchdog behind when the child is stopped normally', async () => {
  const { pids, exited, output } = await runnerWithSleeper('stop');
  await exited;
  expect(output()).toContain('stopped');
  expect(isAlive(pids.sleeper)).toBe(false);
  expect(await watchdogsOf(pids.sleeper)).toBe('');
}, 30_000);

/**
 * The command index of cli/main.ts: `bpa --help` lists commands from it without loading them, so
 * each entry must load the command it names, and each command's own help must come from it.
 */
import { describe, expect, it } from '@jest/globals';
import { commands, main, topLevelUsage } from '../../../cli/main.js';

const capture = () => {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: { stdout: (text: string) => (out.stdout += text), stderr: (text: string) => (out.stderr += text) },
  };
};

describe('bpa command index', () => {
  it.each(commands.map((entry) => [entry.name, entry] as const))(
    '%s loads the command of that name, whose --help is its usage',
    async (name, entry) => {
      const command = await entry.load();
      expect(command.name).toBe(name);
      expect(command.usage).toContain(`bpa ${name}`);
      const { out, io } = capture();
      expect(await main([name, '--help'], io)).toBe(0);
      expect(out).toEqual({ stdout: command.usage, stderr: '' });
    },
  );

  it('bpa --help lists every command with its summary, once', async () => {
    const { out, io } = capture();
    expect(await main(['--help'], io)).toBe(0);
    expect(out.stdout).toBe(topLevelUsage());
    const width = Math.max(...commands.map((entry) => entry.name.length));
    for (const entry of commands)
      expect(out.stdout).toContain(`  ${entry.name.padEnd(width)}  ${entry.summary}\n`);
    expect(new Set(commands.map((entry) => entry.name)).size).toBe(commands.length);
  });

  it('an unknown command is exit 2 with the list on stderr', async () => {
    const { out, io } = capture();
    expect(await main(['deploy'], io)).toBe(2);
    expect(out.stderr).toBe(`bpa: unknown command 'deploy'\n\n${topLevelUsage()}`);
  });
});

describe('--engine', () => {
  it.each([
    [['dev', '--engine', 'rabbit'], '--engine must be embedded or knative, not "rabbit"'],
    [
      ['dev', '--engine', 'knative', '--kubeconfig', 'k.yaml'],
      '--kubeconfig cannot be used with --engine knative',
    ],
    [['dev', '--engine', 'knative', '--replay'], "Knative's ApiServerSource never replays"],
    [['demo', '--engine', 'kafka'], '--engine must be embedded or knative, not "kafka"'],
    [['demo', '--engine', 'knative', '--no-node'], '--engine knative runs Knative on the node'],
  ])('bpa %j is a usage error (exit 2) naming the problem, before anything starts', async (argv, message) => {
    const { out, io } = capture();
    expect(await main(argv, io)).toBe(2);
    expect(out.stderr).toContain(message);
    expect(out.stdout).toBe('');
  });

  it('is documented in both commands’ help', async () => {
    for (const name of ['dev', 'demo']) {
      const { out, io } = capture();
      await main([name, '--help'], io);
      expect(out.stdout).toMatch(/--engine (E|embedded\|knative)/);
      expect(out.stdout).toContain('knative');
    }
  });
});

describe('flags (cli/flags.ts)', () => {
  it.each(['demo', 'dev', 'send', 'control-plane', 'render'])(
    'bpa %s refuses an unknown flag and a stray positional: exit 2, nothing on stdout',
    async (name) => {
      for (const argv of [
        [name, '--no-such-flag'],
        [name, 'stray'],
      ]) {
        const { out, io } = capture();
        expect(await main(argv, io)).toBe(2);
        expect(out.stderr).toMatch(argv[1] === 'stray' ? /positional/i : /--no-such-flag/);
        expect(out.stdout).toBe('');
      }
    },
  );

  it.each([
    ['demo', '0'],
    ['demo', 'http'],
    ['dev', '65536'],
    ['dev', '80.5'],
  ])('bpa %s --port %s is a usage error naming the value', async (name, value) => {
    const { out, io } = capture();
    expect(await main([name, '--port', value], io)).toBe(2);
    expect(out.stderr).toContain(`--port must be a port number (1-65535), not "${value}"`);
  });

  it('bpa render appends its usage to a flag error, as before', async () => {
    const { out, io } = capture();
    expect(await main(['render', '--bogus'], io)).toBe(2);
    expect(out.stderr).toContain('--bogus');
    expect(out.stderr).toContain('Usage: bpa render');
  });
});

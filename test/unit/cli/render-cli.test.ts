import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { main } from '../../../cli/main.js';
import { renderFromContents } from '../../../cli/commands/render.js';
import { UsageError } from '../../../cli/command.js';
import { fixturesRoot } from '../core/golden.js';

const fixture = (...parts: string[]) => join(fixturesRoot, 'render', ...parts);
const goodProvisioning = fixture('provisioning', 'masters-only.yaml');
const goodHosts = fixture('hosts', 'hosts.yaml');

async function run(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(['render', ...args], {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
  });
  return { code, stdout, stderr };
}

describe('bpa render: usage and bad input files (exit 2)', () => {
  let dir: string;
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpa-render-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints its usage for --help', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^Usage: bpa render --provisioning FILE \[--hosts FILE\] \[--leases FILE\] \[--pods FILE\]\n\s+\[--vmis FILE\] \[--output ini\|json\]/,
    );
  });

  it.each([
    [[], /--provisioning FILE is required/],
    [['--provisioning'], /--provisioning/],
    [['--provisioning', goodProvisioning, '--output', 'yaml'], /--output must be ini or json, not "yaml"/],
    [['--provisioning', goodProvisioning, '--frobnicate'], /--frobnicate/],
    [['--provisioning', goodProvisioning, 'extra'], /extra/],
  ])('rejects the options %j', async (args, message) => {
    const result = await run(...args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^bpa render: /);
    expect(result.stderr).toMatch(message);
  });

  it('names a file that cannot be read', async () => {
    const missing = join(dir, 'nope.yaml');
    const result = await run('--provisioning', missing);
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: `bpa render: cannot read ${missing}: no such file\n`,
    });
    const directory = await run('--provisioning', goodProvisioning, '--hosts', dir);
    expect(directory.stderr).toBe(`bpa render: cannot read ${dir}: is a directory\n`);
  });

  it.each([
    ['broken YAML', 'provisioning', 'kind: [Provisioning\n', /: not valid YAML: /],
    [
      'a wrong kind',
      'provisioning',
      'apiVersion: bpa.akraino.org/v1alpha1\nkind: Software\nmetadata: {name: x, labels: {cluster: c}}\nspec: {}\n',
      /invalid Provisioning: kind: must be "Provisioning"/,
    ],
    [
      'no cluster label',
      'provisioning',
      'apiVersion: bpa.akraino.org/v1alpha1\nkind: Provisioning\nmetadata: {name: x}\nspec: {}\n',
      /invalid Provisioning: metadata.labels: is required/,
    ],
    [
      'a cluster name too long',
      'provisioning',
      `apiVersion: bpa.akraino.org/v1alpha1\nkind: Provisioning\nmetadata: {name: x, labels: {cluster: ${'c'.repeat(60)}}}\nspec: {}\n`,
      /metadata.labels.cluster: must be at most 59 characters/,
    ],
    [
      'two Provisionings',
      'provisioning',
      'a: 1\n---\nb: 2\n',
      /expected exactly one Provisioning, found 2 objects/,
    ],
    [
      'a host with a bad field',
      'hosts',
      '- metadata: {name: h1}\n  status: {hardware: {nics: {mac: x}}}\n',
      /hosts.*: status.hardware.nics: expected an array, got an object/,
    ],
    ['pods that are not objects', 'pods', '[1, 2]\n', /pods.*: item 1: expected an object, got a number/],
  ])('explains %s in the named file', async (_what, role, text, message) => {
    const path = file(`${role}-${Math.random().toString(36).slice(2)}.yaml`, text);
    const args =
      role === 'provisioning'
        ? ['--provisioning', path]
        : ['--provisioning', goodProvisioning, `--${role}`, path];
    const result = await run(...args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.startsWith(`bpa render: ${path}: `)).toBe(true);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses a YAML alias bomb without expanding it', async () => {
    const lines = ['apiVersion: bpa.akraino.org/v1alpha1', 'a: &a [x, x, x, x, x, x, x, x, x, x]'];
    let previous = 'a';
    for (let i = 0; i < 15; i++) {
      const name = `l${i}`;
      lines.push(`${name}: &${name} [${Array(10).fill(`*${previous}`).join(', ')}]`);
      previous = name;
    }
    const path = file('bomb.yaml', lines.join('\n') + '\n');
    const result = await run('--provisioning', path);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`^bpa render: ${path}: not valid YAML: .*alias`, 'i'));
  });
});

describe('bpa render: output', () => {
  it('reads the Provisioning as JSON as well as YAML', async () => {
    const provisioning = {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Provisioning',
      metadata: { name: 'p', labels: { cluster: 'c1' } },
      spec: { masters: [{ m1: { 'mac-address': '08:00:27:00:ab:01' } }] },
    };
    const rendered = renderFromContents({
      provisioning: { name: 'p.json', text: JSON.stringify(provisioning) },
      hosts: {
        name: 'h.json',
        text: JSON.stringify([
          {
            metadata: { name: 'h' },
            spec: { bootMACAddress: '08:00:27:00:ab:01' },
            status: { hardware: { nics: [{ mac: '08:00:27:00:ab:01', ip: '10.1.1.1' }] } },
          },
        ]),
      },
    });
    expect(rendered.inventory).toContain('m1  ansible_ssh_host=10.1.1.1 ansible_ssh_port=22\n');
    // The Job runs in the functions' namespace (contract section 12); the tenant's copy of the
    // inventory stays in the Provisioning's.
    expect(rendered.job.metadata?.namespace).toBe('bpa-system');
    expect(rendered.inventoryConfigMap.metadata?.namespace).toBe('default');
    expect(rendered.inventoryConfigMap.data?.['hosts.ini']).toBe(rendered.inventory);
    expect(rendered.job.metadata?.annotations?.['bpa.akraino.org/inventory-sha256']).toBe(
      rendered.inventorySha256,
    );
  });

  it('separates file problems (UsageError) from resolution failures (BpaError)', () => {
    expect(() => renderFromContents({ provisioning: { name: 'x.yaml', text: '{' } })).toThrow(UsageError);
    const text =
      'apiVersion: bpa.akraino.org/v1alpha1\nkind: Provisioning\nmetadata: {name: x, labels: {cluster: c}}\nspec: {masters: [{m1: {mac-address: 08:00:27:00:ab:01}}]}\n';
    expect(() => renderFromContents({ provisioning: { name: 'x.yaml', text } })).toThrow(
      'Host with MAC Address 08:00:27:00:ab:01 not found',
    );
  });
});

// Skipped only before `npm run build` (a bare `jest` run): the real process needs the bundled CLI.
// `npm test` builds first, so in CI it always runs.
const built = existsSync(resolve('dist/bundle/cli/main.mjs'));
(built ? describe : describe.skip)('bpa render as a real process', () => {
  it('prints the inventory on stdout and exit 1 messages alone on stderr', async () => {
    const exec = promisify(execFile);
    const ok = await exec(process.execPath, [
      'bin/bpa.js',
      'render',
      '--provisioning',
      goodProvisioning,
      '--hosts',
      goodHosts,
    ]);
    expect(ok.stdout.startsWith('[all]\nmaster-1  ansible_ssh_host=10.10.10.11 ansible_ssh_port=22\n')).toBe(
      true,
    );
    expect(ok.stderr).toBe('');
    const failed = await exec(process.execPath, [
      'bin/bpa.js',
      'render',
      '--provisioning',
      fixture('provisioning', 'err-host-not-found.yaml'),
      '--hosts',
      goodHosts,
    ]).then(
      () => undefined,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failed).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'Host with MAC Address 08:00:27:00:ab:3d not found\n',
    });
  });
});

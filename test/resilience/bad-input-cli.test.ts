/**
 * Bad input, `bpa render` (through main() from cli/main.ts, with real files): YAML bombs, deep
 * and huge documents, and 1,000 generated hostile Provisionings and BareMetalHost files. Every
 * one ends with exit 1 or 2 and a one-line message, or (when the hostile value is still valid)
 * exit 0 with an inventory in which no value could add a host, a variable or a section.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { main } from '../../cli/main.js';
import { FaultTally } from './report/tally.js';
import { damage, hostileString, resilienceSeed, show, withField } from './support/hostile.js';

const tally = new FaultTally(import.meta.url);

const provisioning = {
  apiVersion: 'bpa.akraino.org/v1alpha1',
  kind: 'Provisioning',
  metadata: { name: 'edge', labels: { cluster: 'edge-1' } },
  spec: {
    masters: [{ 'master-1': { 'mac-address': '08:00:27:00:ab:01' } }],
    workers: [{ 'worker-1': { 'mac-address': '08:00:27:00:ab:02' } }],
    KUDPlugins: ['emco'],
    PodSubnet: '10.244.64.0/18',
  },
};
const host = (name: string, mac: string, ip: string) => ({
  apiVersion: 'metal3.io/v1alpha1',
  kind: 'BareMetalHost',
  metadata: { name, namespace: 'metal3' },
  spec: { bootMACAddress: mac },
  status: { hardware: { nics: [{ name: 'eth0', mac, ip }] } },
});
const hosts = [
  host('host-1', '08:00:27:00:ab:01', '10.10.10.11'),
  host('host-2', '08:00:27:00:ab:02', '10.10.10.12'),
];

/** Lines an inventory may hold: nothing a value could smuggle in. */
const inventoryLine =
  /^(|\[[a-z0-9:-]+\]|[A-Za-z0-9._-]+|[A-Za-z0-9._-]+ {2}ansible_ssh_host=[0-9a-fA-F.:]+ ansible_ssh_port=22( ansible_ssh_user=root)?)$/;

interface Outcome {
  exitCode: number;
  stdout: string;
  stderr: string;
}

describe('bpa render and hostile files', () => {
  let dir: string;
  let sequence = 0;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bpa-render-hostile-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  async function render(files: { provisioning: string; hosts?: string }): Promise<Outcome> {
    const id = ++sequence;
    const args = ['render', '--provisioning', join(dir, `p${id}.yaml`)];
    await writeFile(join(dir, `p${id}.yaml`), files.provisioning);
    if (files.hosts !== undefined) {
      await writeFile(join(dir, `h${id}.yaml`), files.hosts);
      args.push('--hosts', join(dir, `h${id}.yaml`));
    }
    let stdout = '';
    let stderr = '';
    const exitCode = await main(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
    return { exitCode, stdout, stderr };
  }

  /** Why the outcome is not acceptable, or undefined. */
  function problemWith(outcome: Outcome): string | undefined {
    if (outcome.exitCode === 1 || outcome.exitCode === 2) {
      if (outcome.stdout !== '') return 'printed output although it failed';
      // Exit 2 (bad file) names the command; exit 1 is the contract's resolution message as is.
      if (outcome.exitCode === 2 && !/^bpa render: \S/.test(outcome.stderr))
        return `unclear message: ${show(outcome.stderr)}`;
      if (outcome.stderr.trim().length < 10) return `no message: ${show(outcome.stderr)}`;
      if (outcome.stderr.trimEnd().split('\n').length > 3)
        return `message of many lines: ${show(outcome.stderr)}`;
      return undefined;
    }
    if (outcome.exitCode !== 0) return `exit ${outcome.exitCode}`;
    const bad = outcome.stdout
      .trimEnd()
      .split('\n')
      .filter((line) => !inventoryLine.test(line));
    return bad.length > 0 ? `inventory with smuggled lines: ${show(bad)}` : undefined;
  }

  it('renders the valid base (so the damage below is what fails)', async () => {
    const outcome = await render({
      provisioning: stringify(provisioning),
      hosts: hosts.map((h) => stringify(h)).join('---\n'),
    });
    expect(outcome).toMatchObject({ exitCode: 0, stderr: '' });
    expect(problemWith(outcome)).toBeUndefined();
  });

  it.each([
    [
      'billion laughs',
      [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        ...'bcdefghi'
          .split('')
          .map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`),
      ].join('\n') + '\n',
    ],
    ['deep YAML flow nesting', '['.repeat(50_000) + ']'.repeat(50_000)],
    ['deep JSON nesting', '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000)],
    [
      'deep block nesting',
      Array.from({ length: 3000 }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n') + ' 1\n',
    ],
    [
      '20 MB string',
      `apiVersion: bpa.akraino.org/v1alpha1\nkind: Provisioning\nmetadata:\n  name: "${'x'.repeat(20_000_000)}"\n`,
    ],
    ['10,000 documents', Array.from({ length: 10_000 }, () => stringify(provisioning)).join('---\n')],
    [
      'binary garbage',
      Buffer.from(Array.from({ length: 65_536 }, (_, i) => (i * 7919) % 256)).toString('latin1'),
    ],
    ['duplicate keys', 'kind: Provisioning\nkind: Software\n'],
    ['custom tags', '!!js/function "function(){ return 1 }"\n'],
  ])(
    'refuses a %s with exit 2 and a one-line message',
    async (_name, text) => {
      const outcome = await render({ provisioning: text });
      const problem =
        outcome.exitCode === 2 ? problemWith(outcome) : `exit ${outcome.exitCode}: ${show(outcome.stderr)}`;
      tally.record('Bad input', problem === undefined);
      expect(problem).toBeUndefined();
    },
    120_000,
  );

  it('answers 1,000 hostile Provisionings and host files with exit 1/2 and a message, or a clean inventory', async () => {
    const damagedProvisioning = damage(provisioning, {
      required: [
        { path: ['apiVersion'], type: 'string' },
        { path: ['kind'], type: 'string' },
        { path: ['metadata'], type: 'object' },
        { path: ['metadata', 'labels'], type: 'object' },
        { path: ['metadata', 'labels', 'cluster'], type: 'string' },
        { path: ['spec'], type: 'object' },
        { path: ['spec', 'masters'], type: 'array' },
        { path: ['spec', 'masters', 0], type: 'object' },
        { path: ['spec', 'workers'], type: 'array', optional: true },
        { path: ['spec', 'KUDPlugins'], type: 'array', optional: true },
        { path: ['spec', 'PodSubnet'], type: 'string', optional: true },
      ],
      text: [
        ['metadata', 'labels', 'cluster'],
        ['metadata', 'labels', 'cluster-type'],
        ['spec', 'masters', 0, 'master-1', 'mac-address'],
        ['spec', 'workers', 0, 'worker-1', 'mac-address'],
        ['spec', 'KUDPlugins', 0],
        ['spec', 'PodSubnet'],
      ],
    }).map((d) => ({ ...d, provisioning: d.value, hosts }));
    const hostileLabel = hostileString.map((label) => ({
      how: 'hostile node label',
      malformed: false,
      provisioning: withField(
        provisioning,
        ['spec', 'masters'],
        [{ [label]: { 'mac-address': '08:00:27:00:ab:01' } }],
      ),
      hosts,
    }));
    const hostileHosts = fc.tuple(fc.constantFrom(0, 1), hostileString).map(([index, ip]) => ({
      how: 'hostile BareMetalHost NIC ip',
      malformed: false,
      provisioning,
      hosts: hosts.map((h, i) =>
        i === index ? withField(h, ['status', 'hardware', 'nics', 0, 'ip'], ip) : h,
      ),
    }));
    const outcomes = new Map<string, number>();
    const problems: string[] = [];
    await fc.assert(
      fc.asyncProperty(
        fc.oneof({ arbitrary: damagedProvisioning, weight: 3 }, hostileLabel, hostileHosts),
        fc.boolean(),
        async (input, asJson) => {
          const serialise = (value: unknown) => (asJson ? JSON.stringify(value) : stringify(value));
          const outcome = await render({
            provisioning: serialise(input.provisioning),
            hosts: input.hosts.map(serialise).join(asJson ? '\n' : '---\n'),
          });
          const problem =
            problemWith(outcome) ??
            (input.malformed && outcome.exitCode === 0 ? 'malformed but rendered' : undefined);
          tally.record('Bad input', problem === undefined);
          const key = `${input.how.replace(/ as \w+$/, '')} → exit ${outcome.exitCode}`;
          outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
          if (problem) problems.push(`${input.how}: ${problem} for ${show(input)}`);
        },
      ),
      { seed: resilienceSeed, numRuns: 1000, endOnFailure: false },
    );
    const total = [...outcomes.values()].reduce((a, b) => a + b, 0);
    tally.note(
      `bpa render: ${total} hostile inputs: ${[...outcomes.entries()]
        .sort()
        .map(([k, n]) => `${k} ×${n}`)
        .join('; ')}`,
    );
    expect(problems.slice(0, 10)).toEqual([]);
  }, 600_000);
});

import { join } from 'node:path';
import { main } from '../../../cli/main.js';
import { expectGolden, fixturesRoot } from '../core/golden.js';

/**
 * Every render case runs through the real CLI entry point in-process; the inventory, the
 * JSON (nodes, Job, IP ConfigMap) and, for failures, the exit code and stderr are compared
 * with golden files under test/golden/render/.
 */
interface RenderCase {
  name: string;
  hosts?: string;
  leases?: string;
  pods?: string;
  vmis?: string;
}

const fixture = (...parts: string[]) => join(fixturesRoot, 'render', ...parts);

function argsFor(c: RenderCase): string[] {
  const args = ['render', '--provisioning', fixture('provisioning', `${c.name}.yaml`)];
  if (c.hosts) args.push('--hosts', fixture('hosts', c.hosts));
  if (c.leases) args.push('--leases', fixture('leases', c.leases));
  if (c.pods) args.push('--pods', fixture('pods', c.pods));
  if (c.vmis) args.push('--vmis', fixture('vmis', c.vmis));
  return args;
}

async function run(args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

const hosts = 'hosts.yaml';
const successes: RenderCase[] = [
  { name: 'masters-only', hosts },
  { name: 'masters-and-workers', hosts, leases: 'dhcpd.leases' },
  { name: 'master-as-worker-null', hosts },
  { name: 'master-as-worker-own-mac', hosts },
  { name: 'worker-order', hosts },
  { name: 'mac-forms', hosts },
  { name: 'prefix-labels', hosts, leases: 'dhcpd.leases' },
  { name: 'installer-args', hosts },
  { name: 'dnsmasq', hosts, leases: 'dnsmasq.leases' },
  { name: 'hosts-as-list', hosts: 'host-list.json' },
  { name: 'virtlet', pods: 'pods.yaml' },
  { name: 'kubevirt', vmis: 'vmis.yaml' },
];

const failures: RenderCase[] = [
  { name: 'err-master-mac-missing', hosts },
  { name: 'err-worker-mac-missing', hosts },
  { name: 'err-label-exists', hosts },
  { name: 'err-mac-of-master', hosts },
  { name: 'err-duplicate-mac', hosts },
  { name: 'err-host-not-found', hosts },
  { name: 'err-ip-not-found', hosts },
  { name: 'err-worker-ip-not-found', hosts },
  { name: 'err-isc-inactive', hosts, leases: 'dhcpd.leases' },
  { name: 'err-invalid-mac', hosts },
  { name: 'err-preflight', hosts },
  { name: 'err-virtlet-ip-not-found', pods: 'pods.yaml' },
  { name: 'err-virtlet-not-virtlet', pods: 'pods.yaml' },
  { name: 'err-kubevirt-ip-not-found', vmis: 'vmis.yaml' },
  { name: 'err-kubevirt-not-running', vmis: 'vmis.yaml' },
];

describe('bpa render golden files', () => {
  it.each(successes)('$name renders the expected inventory and manifests', async (c) => {
    const ini = await run(argsFor(c));
    expect(ini).toMatchObject({ code: 0, stderr: '' });
    expectGolden(`render/${c.name}.hosts.ini`, ini.stdout);

    const json = await run([...argsFor(c), '--output', 'json']);
    expect(json).toMatchObject({ code: 0, stderr: '' });
    const rendered = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(Object.keys(rendered)).toEqual([
      'cluster',
      'clusterType',
      'nodes',
      'inventory',
      'job',
      'clusterConfigMap',
    ]);
    expect(rendered.inventory).toBe(ini.stdout);
    expectGolden(`render/${c.name}.json`, json.stdout);
  });

  it.each(failures)('$name fails with exit 1 and the contract message alone on stderr', async (c) => {
    const result = await run(argsFor(c));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^[^\n]+\n$/);
    expectGolden(`render/${c.name}.stderr`, result.stderr);
  });
});

/**
 * The lease publisher's rules (functions/host-lookup/leases-publisher): it applies the file only
 * when its content changed, never a file over a ConfigMap's 1 MiB, says a lasting state once, and
 * retries after an API error. The API is a recording fake here; the real exchange (dnsmasq, a DHCP
 * client, kube-apiserver, the shipped RBAC) is test/integration/leases/leases-publisher.test.ts.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  configMapMaxBytes,
  leasesPublisherFieldManager,
  LeasesPublisher,
} from '../../../functions/host-lookup/leases-publisher/publish.js';
import { parseLeasesPublishArgs } from '../../../functions/host-lookup/leases-publisher/run.js';
import { main } from '../../../cli/main.js';
import type { KubeClients } from '../../../shared/k8s/clients.js';
import { createLogger } from '../../../shared/log.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bpa-leases-unit-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function setUp(name: string) {
  const patches: {
    name: string;
    namespace: string;
    body: { data: Record<string, string> };
    fieldManager: string;
    force: boolean;
  }[] = [];
  let fail: Error | undefined;
  const clients = {
    core: {
      patchNamespacedConfigMap: async (params: (typeof patches)[number]) => {
        if (fail) throw fail;
        patches.push(params);
        return params.body;
      },
    },
  } as unknown as KubeClients;
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const file = join(dir, name);
  const publisher = new LeasesPublisher(
    clients,
    {
      file,
      configmap: { kind: 'configmap', namespace: 'ironic', name: 'bpa-dhcp-leases', key: 'dnsmasq.leases' },
    },
    log,
  );
  return { publisher, patches, lines, file, failWith: (error: Error | undefined) => (fail = error) };
}

const lease = '1796325909 52:54:00:aa:bb:01 10.213.0.98 * 01:52:54:00:aa:bb:01\n';

describe('LeasesPublisher', () => {
  it('applies the file as the one key of the ConfigMap, by server-side apply, only when it changed', async () => {
    const { publisher, patches, file } = setUp('changes');
    await writeFile(file, lease);
    expect(await publisher.publishOnce()).toBe('published');
    expect(await publisher.publishOnce()).toBe('unchanged');
    expect(patches).toEqual([
      {
        name: 'bpa-dhcp-leases',
        namespace: 'ironic',
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'bpa-dhcp-leases', namespace: 'ironic' },
          data: { 'dnsmasq.leases': lease },
        },
        fieldManager: leasesPublisherFieldManager,
        force: true,
      },
    ]);
    const next = `${lease}1796325999 52:54:00:aa:bb:02 10.213.0.97 * *\n`;
    await writeFile(file, next);
    expect(await publisher.publishOnce()).toBe('published');
    expect(patches.map((p) => p.body.data['dnsmasq.leases'])).toEqual([lease, next]);
  });

  it('waits for a file dnsmasq has not written yet, saying so once', async () => {
    const { publisher, patches, lines, file } = setUp('missing');
    expect(await publisher.publishOnce()).toBe('missing');
    expect(await publisher.publishOnce()).toBe('missing');
    expect(lines.filter((l) => l.msg === 'no lease file yet')).toHaveLength(1);
    await writeFile(file, lease);
    expect(await publisher.publishOnce()).toBe('published');
    expect(patches).toHaveLength(1);
  });

  it('never applies more than a ConfigMap holds (1 MiB): the last one stays, an error said once', async () => {
    const { publisher, patches, lines, file } = setUp('large');
    await writeFile(file, lease);
    await publisher.publishOnce();
    await writeFile(file, 'x'.repeat(configMapMaxBytes));
    expect(await publisher.publishOnce()).toBe('too-large');
    expect(await publisher.publishOnce()).toBe('too-large');
    expect(patches).toHaveLength(1);
    expect(lines.filter((l) => l.reason === 'LeasesTooLarge')).toEqual([
      expect.objectContaining({ level: 'error', bytes: configMapMaxBytes + 'dnsmasq.leases'.length }),
    ]);
    // Just under the limit, key included: published.
    await writeFile(file, 'x'.repeat(configMapMaxBytes - 'dnsmasq.leases'.length));
    expect(await publisher.publishOnce()).toBe('published');
  });

  it('after an API error the same content is applied again on the next look', async () => {
    const { publisher, patches, file, failWith } = setUp('retry');
    await writeFile(file, lease);
    failWith(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    await expect(publisher.publishOnce()).rejects.toThrow();
    failWith(undefined);
    expect(await publisher.publishOnce()).toBe('published');
    expect(patches).toHaveLength(1);
  });
});

describe('its command line', () => {
  it('reads the file, the ConfigMap and the interval', () => {
    expect(
      parseLeasesPublishArgs([
        '--file',
        '/var/lib/dnsmasq/dnsmasq.leases',
        '--configmap',
        'metal3/leases/dnsmasq.leases',
        '--interval',
        '0.5',
      ]),
    ).toEqual({
      file: '/var/lib/dnsmasq/dnsmasq.leases',
      configmap: { kind: 'configmap', namespace: 'metal3', name: 'leases', key: 'dnsmasq.leases' },
      interval: 0.5,
      once: false,
    });
  });
  it.each([
    [['--configmap', 'a/b/c'], '--file: required (the lease file)'],
    [['--file', 'leases', '--configmap', 'a/b/c'], '--file: must be an absolute path'],
    [['--file', '/l', '--configmap', 'a/b'], '--configmap: must be <namespace>/<name>/<key>'],
    [['--file', '/l', '--configmap', 'a/b/c', '--interval', '0'], '--interval: '],
  ])('refuses %j', (argv, message) => {
    expect(() => parseLeasesPublishArgs(argv)).toThrow(message);
  });
  it('bpa leases publish: a usage error is exit 2, naming the flag', async () => {
    const err: string[] = [];
    const io = { stdout: () => undefined, stderr: (text: string) => void err.push(text) };
    expect(await main(['leases', 'publish', '--file', 'relative', '--configmap', 'a/b/c'], io)).toBe(2);
    expect(err.join('')).toContain('bpa leases: --file: must be an absolute path');
    expect(await main(['leases', 'pull'], io)).toBe(2);
    expect(err.join('')).toContain(`bpa leases: expected 'publish', got "pull"`);
  });
});

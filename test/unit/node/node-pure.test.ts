/**
 * The local node's pure parts (the node itself, our imitation of a kubelet, is tested against the
 * real control plane in test/integration/node): image map validation and lookup, $(VAR)
 * expansion, downward-API fields, the kubelet's service variables, the launcher script.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BpaError } from '../../../shared/errors.js';
import { launcherScript, resolveOnMachine } from '../../../local/node/container-process.js';
import { expandReferences, podFieldValue } from '../../../local/node/env.js';
import { loadImageMap, lookupImage, unmappedImageMessage } from '../../../local/node/image-map.js';
import { firstServiceAddress, serviceEnvironment } from '../../../local/node/service-env.js';
import { slotLayout } from '../../../local/node/slot.js';
import { repoRoot } from '../../../local/control-plane/repo-root.js';
import { knativeBinaries } from '../../../local/knative/binaries.js';
import { probePath, runProbeOnce } from '../../../local/node/probes.js';

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'node-pure-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mapFile = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('image map', () => {
  it('substitutes ${REPO_ROOT} and ${NODE}, fills defaults and finds docker.io spellings of short names', () => {
    const map = loadImageMap([
      mapFile(
        'a.yaml',
        'images:\n  docker.io/library/busybox:1.36:\n    command: ["${NODE}", "${REPO_ROOT}/x.mjs"]\n',
      ),
    ]);
    const entry = lookupImage(map, 'busybox:1.36');
    expect(entry).toEqual({ command: [process.execPath, `${repoRoot()}/x.mjs`], args: [], env: {} });
    expect(lookupImage(map, 'docker.io/library/busybox:1.36')).toBe(entry);
    expect(lookupImage(map, 'busybox')).toBeUndefined();
    expect(lookupImage(map, 'quay.io/busybox:1.36')).toBeUndefined();
  });

  it('lets a later file win and refuses a bad entry with the file and the field', () => {
    const first = mapFile('b.yaml', 'images:\n  x:1:\n    command: [/bin/a]\n');
    const second = mapFile('c.yaml', 'images:\n  x:1:\n    command: [/bin/b]\n');
    expect(lookupImage(loadImageMap([first, second]), 'x:1')?.command).toEqual(['/bin/b']);
    const bad = mapFile('d.yaml', 'images:\n  x:1:\n    command: []\n');
    const error = (() => {
      try {
        loadImageMap([bad]);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(BpaError);
    expect((error as BpaError).reason).toBe('InvalidImageMap');
    expect((error as BpaError).message).toContain(`${bad}: images.x:1.command`);
    expect(() =>
      loadImageMap([mapFile('e.yaml', 'images:\n  x:1:\n    command: [a]\n    shell: true\n')]),
    ).toThrow(/shell|unrecognized/i);
  });

  it('runs every Knative image of config/ from the Knative builds (KNATIVE_EVENTING_ASSETS honoured)', () => {
    const saved = process.env.KNATIVE_EVENTING_ASSETS;
    process.env.KNATIVE_EVENTING_ASSETS = '/opt/knative-bin';
    try {
      const map = loadImageMap();
      expect(lookupImage(map, 'ko://knative.dev/eventing/cmd/broker/ingress')?.command).toEqual([
        '/opt/knative-bin/ingress',
      ]);
      for (const name of knativeBinaries.knative.filter((b) => b !== 'event_display'))
        expect([...map.values()].some((e) => e.command[0] === `/opt/knative-bin/${name}`)).toBe(true);
    } finally {
      if (saved === undefined) delete process.env.KNATIVE_EVENTING_ASSETS;
      else process.env.KNATIVE_EVENTING_ASSETS = saved;
    }
  });

  it("names the image and the map in ErrImageNeverPull's message", () => {
    expect(unmappedImageMessage('r.example/a:1')).toMatch(/"r\.example\/a:1".*image map/);
  });
});

describe('environment', () => {
  it('expands $(VAR) like Kubernetes: known names, $$ escapes, unknown ones stay', () => {
    const vars: Record<string, string> = { A: 'one', B: 'two' };
    expect(expandReferences('$(A)-$(B)-$(C)-$$(A)-$', (name) => vars[name])).toBe('one-two-$(C)-$(A)-$');
  });

  it('reads downward-API fields, including one label and all labels', () => {
    const pod = {
      metadata: { name: 'p', namespace: 'n', uid: 'u', labels: { b: '2', a: '1' } },
      spec: { nodeName: 'node', containers: [] },
    };
    const field = (fieldPath: string) => podFieldValue({ fieldPath }, pod, '10.244.0.3', '127.0.0.1');
    expect(field('metadata.name')).toBe('p');
    expect(field("metadata.labels['b']")).toBe('2');
    expect(field('metadata.labels')).toBe('a="1"\nb="2"');
    expect(field('spec.serviceAccountName')).toBe('default');
    expect(field('status.podIP')).toBe('10.244.0.3');
    expect(field('status.hostIP')).toBe('127.0.0.1');
    expect(() => field('spec.bogus')).toThrow(/unsupported fieldPath/);
  });

  it("gives the kubelet's service variables: the kubernetes Service, and links of the pod's namespace only", () => {
    const views = [
      {
        namespace: 'default',
        name: 'kubernetes',
        type: 'ClusterIP',
        clusterIP: '10.0.3.1',
        ports: [],
        readyAddresses: [],
      },
      {
        namespace: 'a',
        name: 'my-web',
        type: 'ClusterIP',
        clusterIP: '10.0.3.9',
        ports: [{ port: 80, name: 'http', backends: [] }],
        readyAddresses: [],
      },
      {
        namespace: 'b',
        name: 'other',
        type: 'ClusterIP',
        clusterIP: '10.0.3.7',
        ports: [{ port: 81, backends: [] }],
        readyAddresses: [],
      },
    ];
    const env = serviceEnvironment(views, 'a', true, '10.0.3.0/24');
    expect(env).toMatchObject({
      KUBERNETES_SERVICE_HOST: '10.0.3.1',
      KUBERNETES_SERVICE_PORT: '443',
      KUBERNETES_PORT_443_TCP_ADDR: '10.0.3.1',
      MY_WEB_SERVICE_HOST: '10.0.3.9',
      MY_WEB_SERVICE_PORT_HTTP: '80',
      MY_WEB_PORT_80_TCP: 'tcp://10.0.3.9:80',
    });
    expect(env.OTHER_SERVICE_HOST).toBeUndefined();
    expect(serviceEnvironment(views, 'a', false, '10.0.3.0/24').MY_WEB_SERVICE_HOST).toBeUndefined();
    expect(firstServiceAddress('10.0.7.0/24')).toBe('10.0.7.1');
  });
});

describe('launcher and slots', () => {
  it('passes the command as arguments, quotes paths and mounts under the overlay root', () => {
    const script = launcherScript(
      {
        hostname: "it's",
        workingDir: '/w d',
        mounts: [{ source: "/tmp/v'1", target: '/var/run/secrets/x', readOnly: true }],
      },
      { root: '/dev/shm/r', upper: '/dev/shm/u', work: '/dev/shm/w' },
    );
    expect(script).toContain(`printf %s 'it'\\''s' > /proc/sys/kernel/hostname`);
    expect(script).toContain(`lowerdir=/,upperdir=/dev/shm/u,workdir=/dev/shm/w`);
    expect(script).toContain(`/usr/bin/mount --bind '/tmp/v'\\''1' "$root"'/run/secrets/x'`);
    expect(script).toContain(`/usr/bin/mount -o remount,bind,ro "$root"'/run/secrets/x'`);
    expect(script.trimEnd().split('\n').pop()).toBe(
      `exec /usr/sbin/chroot "$root" /bin/sh -c 'cd "$0" && exec "$@"' '/w d' "$@"`,
    );
    expect(resolveOnMachine('/var/run/a/b')).toBe('/run/a/b');
  });

  it('gives each slot its own bridge, namespaces, pod subnet and Service range', () => {
    expect(slotLayout(3)).toMatchObject({
      bridge: 'bpa3br0',
      nodeNetns: 'bpa3-node',
      podSubnetPrefix: '10.244.3',
      serviceClusterIpRange: '10.0.3.0/24',
    });
  });
});

describe('probes', () => {
  it("asks for /<path> when an httpGet probe's path has no leading slash, as the kubelet does", async () => {
    expect(probePath('health')).toBe('/health');
    expect(probePath('/ready')).toBe('/ready');
    expect(probePath(undefined)).toBe('/');
    const seen: string[] = [];
    const server = createServer((request, response) => {
      seen.push(request.url ?? '');
      response.writeHead(request.url === '/health' ? 200 : 404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      // Knative's ApiServerSource adapter's liveness probe, as its controller writes it.
      const passed = await runProbeOnce(
        { httpGet: { path: 'health', port: 'probes', scheme: 'HTTP' }, timeoutSeconds: 1 },
        {
          podIP: '127.0.0.1',
          container: { name: 'receive-adapter', ports: [{ name: 'probes', containerPort: port }] },
          exec: () => Promise.resolve(1),
        },
      );
      expect(passed).toBe(true);
      expect(seen).toEqual(['/health']);
    } finally {
      server.close();
    }
  });
});

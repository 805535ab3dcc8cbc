/**
 * The one-machine cluster: real etcd, kube-apiserver, kube-controller-manager and kube-scheduler,
 * plus the local node, which is OUR IMITATION of a kubelet (there is no container runtime here):
 * it runs each container as a local process in its pod's own network and mount namespaces, from
 * the image map test/fixtures/node/images.yaml. Deployments, ReplicaSets, Jobs, EndpointSlices and
 * the garbage collector are Kubernetes' own. This file starts its own cluster (its own slot:
 * bridge, pod subnet, Service range), so it never disturbs the shared suites.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { AppsV1Api, BatchV1Api, CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import {
  createNamespace,
  repoRoot,
  uniqueNamespaceName,
  waitFor,
} from '../../../local/control-plane/index.js';
import type { LocalCluster } from '../../../local/node/index.js';
import { startLocalCluster } from '../../../local/node/index.js';
import { isAlive } from '../../support/processes.js';

const run = promisify(execFile);
let cluster: LocalCluster;
let core: CoreV1Api;
let apps: AppsV1Api;
let batch: BatchV1Api;
let discovery: DiscoveryV1Api;
let namespace = '';
let cacheDir = '';
const images = join(repoRoot(), 'test', 'fixtures', 'node', 'images.yaml');

beforeAll(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), 'kubectl-cache-'));
  cluster = await startLocalCluster({ handleSignals: false, node: { imageMapFiles: [images] } });
  const kubeConfig = cluster.controlPlane.kubeConfig;
  core = kubeConfig.makeApiClient(CoreV1Api);
  apps = kubeConfig.makeApiClient(AppsV1Api);
  batch = kubeConfig.makeApiClient(BatchV1Api);
  discovery = kubeConfig.makeApiClient(DiscoveryV1Api);
  namespace = await createNamespace(kubeConfig, uniqueNamespaceName('node'));
  // The ServiceAccount admission plugin refuses pods until the controller made `default`.
  await waitFor(() => core.readNamespacedServiceAccount({ name: 'default', namespace }).then(() => true), {
    what: 'the default ServiceAccount',
    timeoutMs: 60_000,
  });
}, 300_000);

afterAll(async () => {
  const slot = cluster?.node.slot;
  const pids = cluster ? [cluster.controlPlane.processes.kubeControllerManager?.pid ?? -1] : [];
  await cluster?.stop();
  await rm(cacheDir, { recursive: true, force: true });
  if (slot) {
    // Nothing of the node is left: no namespace of its slot, no bridge, no controller process.
    const { stdout } = await run('ip', ['netns', 'list']);
    expect(stdout.split('\n').filter((line) => line.startsWith(slot.netnsPrefix))).toEqual([]);
    await expect(run('ip', ['link', 'show', slot.bridge])).rejects.toThrow();
    expect(pids.filter(isAlive)).toEqual([]);
  }
}, 120_000);

const kubectl = async (...args: string[]) =>
  (
    await run(
      'kubectl',
      [
        '--kubeconfig',
        cluster.controlPlane.kubeconfigPath,
        '--cache-dir',
        cacheDir,
        '-n',
        namespace,
        ...args,
      ],
      { timeout: 60_000 },
    )
  ).stdout;

const readPod = (name: string) => core.readNamespacedPod({ name, namespace });

async function podUntil(
  name: string,
  what: string,
  check: (pod: V1Pod) => boolean,
  timeoutMs = 90_000,
): Promise<V1Pod> {
  return waitFor(
    async () => {
      const pod = await readPod(name);
      return check(pod) ? pod : undefined;
    },
    { what: `pod ${name}: ${what}`, timeoutMs, intervalMs: 250 },
  );
}

const isReady = (pod: V1Pod) =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const phaseIs = (phase: string) => (pod: V1Pod) => pod.status?.phase === phase;

async function createPod(
  name: string,
  container: Partial<V1Container>,
  spec: Partial<NonNullable<V1Pod['spec']>> = {},
) {
  return core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels: { app: name } },
      spec: {
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: 'bpa.local/test/report:1', ...container }],
        ...spec,
      },
    },
  });
}

/** The JSON line the report image printed, read through `kubectl logs` (kube-apiserver -> node). */
async function report(name: string) {
  await podUntil(name, 'Succeeded', phaseIs('Succeeded'));
  const text = await kubectl('logs', name);
  return JSON.parse(text.trim().split('\n').pop() ?? '{}') as {
    env: Record<string, string>;
    files: Record<string, string>;
    api: number | string;
    connects: Record<string, { ok: boolean; error?: string; ms: number }>;
  };
}

function httpGet(
  host: string,
  port: number,
  path: string,
  method = 'GET',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, method, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    // `timeout` only emits an event: without this, a connect to an address nobody holds any more
    // waits for the kernel's SYN retries (about two minutes) and outlasts the test's own timeout.
    req.on('timeout', () => req.destroy(new Error(`no answer from ${host}:${port} within 5 s`)));
    req.on('error', reject);
    req.end();
  });
}

const httpContainer: Partial<V1Container> = {
  image: 'bpa.local/test/http:1',
  ports: [{ name: 'http', containerPort: 8080 }],
  readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 1, failureThreshold: 1 },
};

describe('pods as processes', () => {
  it('runs a Deployment whose pods listen on 8080 at once, each with its own IP', async () => {
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', ...httpContainer }] },
          },
        },
      },
    });
    const pods = await waitFor(
      async () => {
        const list = await core.listNamespacedPod({ namespace, labelSelector: 'app=web' });
        return list.items.length === 2 && list.items.every(isReady) ? list.items : undefined;
      },
      { what: 'two ready web pods', timeoutMs: 90_000, intervalMs: 250 },
    );
    const ips = pods.map((pod) => pod.status?.podIP ?? '');
    expect(new Set(ips).size).toBe(2);
    for (const ip of ips) expect(ip.startsWith(`${cluster.node.slot.podSubnetPrefix}.`)).toBe(true);
    const names = await Promise.all(
      ips.map(async (ip) => JSON.parse((await httpGet(ip, 8080, '/whoami')).body)),
    );
    expect(names.map((n: { hostname: string }) => n.hostname).sort()).toEqual(
      pods.map((p) => p.metadata?.name).sort(),
    );
    expect(pods.every((pod) => pod.spec?.nodeName === cluster.node.name)).toBe(true);
  });

  it('resolves Service names (ClusterIP and ExternalName) inside a pod and reaches a ready endpoint', async () => {
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 'http' }] },
      },
    });
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: 'alias' },
        spec: { type: 'ExternalName', externalName: `web.${namespace}.svc.cluster.local` },
      },
    });
    await createPod('client', {
      image: 'bpa.local/test/node:1',
      args: [
        '-e',
        `const dns = require('node:dns/promises');
         (async () => {
           const web = await dns.lookup('web.${namespace}.svc.cluster.local');
           const short = await dns.lookup('web');
           const alias = await dns.lookup('alias.${namespace}.svc.cluster.local');
           const body = await (await fetch('http://web.${namespace}.svc.cluster.local/')).text();
           console.log(JSON.stringify({ web: web.address, short: short.address, alias: alias.address, body }));
         })().catch((e) => { console.error(e); process.exit(1); });`,
      ],
    });
    await podUntil('client', 'Succeeded', phaseIs('Succeeded'));
    const service = await core.readNamespacedService({ name: 'web', namespace });
    const seen = JSON.parse((await kubectl('logs', 'client')).trim()) as Record<string, string>;
    expect(seen.web).toBe(service.spec?.clusterIP);
    expect(seen.short).toBe(service.spec?.clusterIP);
    expect(seen.alias).toBe(service.spec?.clusterIP);
    expect(seen.body).toMatch(/^hello from web-/);
  });

  it('gives containers env and volumes of every kind, and a token that works against the API', async () => {
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'settings' }, data: { colour: 'blue', 'app.conf': 'size=3\n' } },
    });
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'creds' }, stringData: { password: 's3cret', user: 'bpa' } },
    });
    const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
    await createPod(
      'reporter',
      {
        args: [
          '/config/colour',
          '/config-one/app.conf',
          '/secret/password',
          '/info/labels',
          '/info/name',
          '/scratch/hello',
          '/host/from-init',
          `${sa}/namespace`,
          `${sa}/ca.crt`,
          `${sa}/token`,
        ],
        env: [
          { name: 'PLAIN', value: 'x' },
          { name: 'EXPANDED', value: '$(PLAIN)-y' },
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
          { name: 'SA_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
          { name: 'COLOUR', valueFrom: { configMapKeyRef: { name: 'settings', key: 'colour' } } },
          { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
          { name: 'MISSING', valueFrom: { secretKeyRef: { name: 'nope', key: 'x', optional: true } } },
        ],
        envFrom: [{ configMapRef: { name: 'settings' }, prefix: 'CM_' }, { secretRef: { name: 'creds' } }],
        volumeMounts: [
          { name: 'config', mountPath: '/config' },
          { name: 'config', mountPath: '/config-one/app.conf', subPath: 'app.conf' },
          { name: 'secret', mountPath: '/secret' },
          { name: 'info', mountPath: '/info' },
          { name: 'scratch', mountPath: '/scratch' },
          { name: 'host', mountPath: '/host', readOnly: true },
        ],
      },
      {
        initContainers: [
          {
            name: 'prepare',
            image: 'bpa.local/test/shell:1',
            command: ['/bin/sh', '-c', 'echo hi > /scratch/hello && echo init > /host/from-init'],
            volumeMounts: [
              { name: 'scratch', mountPath: '/scratch' },
              { name: 'host', mountPath: '/host' },
            ],
          },
        ],
        volumes: [
          { name: 'config', configMap: { name: 'settings' } },
          { name: 'secret', secret: { secretName: 'creds' } },
          {
            name: 'info',
            downwardAPI: {
              items: [
                { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
              ],
            },
          },
          { name: 'scratch', emptyDir: {} },
          { name: 'host', hostPath: { path: '/data/reporter', type: 'DirectoryOrCreate' } },
        ],
      },
    );
    const seen = await report('reporter');
    const pod = await readPod('reporter');
    expect(seen.env).toMatchObject({
      PLAIN: 'x',
      EXPANDED: 'x-y',
      POD_NAME: 'reporter',
      POD_NAMESPACE: namespace,
      POD_IP: pod.status?.podIP,
      NODE_NAME: cluster.node.name,
      SA_NAME: 'default',
      COLOUR: 'blue',
      PASSWORD: 's3cret',
      CM_colour: 'blue',
      user: 'bpa',
      KUBERNETES_SERVICE_PORT: '443',
      HOSTNAME: 'reporter',
    });
    expect(seen.env.MISSING).toBeUndefined();
    expect(seen.env.KUBERNETES_SERVICE_HOST).toBe(`10.0.${cluster.node.slot.index}.1`);
    expect(seen.files).toMatchObject({
      '/config/colour': 'blue',
      '/config-one/app.conf': 'size=3\n',
      '/secret/password': 's3cret',
      '/info/labels': 'app="reporter"',
      '/info/name': 'reporter',
      '/scratch/hello': 'hi\n',
      '/host/from-init': 'init\n',
      [`${sa}/namespace`]: namespace,
    });
    expect(seen.files[`${sa}/ca.crt`]).toContain('BEGIN CERTIFICATE');
    expect(seen.files[`${sa}/token`]?.split('.')).toHaveLength(3);
    // The injected token, through the node's `kubernetes` Service proxy, with the API server's CA.
    expect(seen.api).toBe(200);
    // hostPath lives in the node's own directory; mount targets stayed in the container's overlay.
    expect(existsSync(join(cluster.node.workDir, 'host-paths', 'data', 'reporter', 'from-init'))).toBe(true);
    expect(existsSync('/data/reporter')).toBe(false);
    expect(existsSync('/config-one')).toBe(false);
  });

  it('keeps pods off every network but its own: no route to an outside address', async () => {
    await createPod('isolated', { args: ['connect:192.0.2.1:80'] });
    await createPod('isolated-host', { args: ['connect:192.0.2.1:80'] }, { hostNetwork: true });
    for (const name of ['isolated', 'isolated-host']) {
      const seen = await report(name);
      expect(seen.connects['192.0.2.1:80']).toMatchObject({ ok: false, error: 'ENETUNREACH' });
      expect(seen.api).toBe(200);
    }
    const hostPod = await readPod('isolated-host');
    expect(hostPod.status?.podIP).toBe(cluster.node.nodeIp);
  });

  it('waits with ErrImageNeverPull for an image that is not in the map', async () => {
    await createPod('unmapped', { image: 'registry.example/not-mapped:1.0' });
    const pod = await podUntil(
      'unmapped',
      'ErrImageNeverPull',
      (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ErrImageNeverPull',
    );
    expect(pod.status?.phase).toBe('Pending');
    expect(pod.status?.containerStatuses?.[0]?.state?.waiting?.message).toContain(
      'registry.example/not-mapped:1.0',
    );
  });
});

describe('probes', () => {
  it('readiness drives Ready and the EndpointSlice; a failing liveness probe restarts the container', async () => {
    await createPod('probed', { ...httpContainer, livenessProbe: undefined }, { restartPolicy: 'Always' });
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: 'probed' },
        spec: { selector: { app: 'probed' }, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    const endpointReady = async () => {
      const slices = await discovery.listNamespacedEndpointSlice({
        namespace,
        labelSelector: 'kubernetes.io/service-name=probed',
      });
      return slices.items
        .flatMap((slice) => slice.endpoints ?? [])
        .map((endpoint) => endpoint.conditions?.ready);
    };
    const pod = await podUntil('probed', 'Ready', isReady);
    await waitFor(async () => ((await endpointReady()).join() === 'true' ? true : undefined), {
      what: 'a ready endpoint',
      timeoutMs: 30_000,
    });
    await httpGet(pod.status?.podIP ?? '', 8080, '/ready?state=off', 'POST');
    await podUntil('probed', 'not Ready', (p) => !isReady(p), 30_000);
    await waitFor(async () => ((await endpointReady()).join() === 'false' ? true : undefined), {
      what: 'the endpoint not ready',
      timeoutMs: 30_000,
    });
    await httpGet(pod.status?.podIP ?? '', 8080, '/ready?state=on', 'POST');
    await podUntil('probed', 'Ready again', isReady, 30_000);

    await createPod(
      'unhealthy',
      {
        image: 'bpa.local/test/shell:1',
        command: ['/bin/sh', '-c', 'echo started; sleep 600'],
        // Each run lives 3 s before its first probe: long enough to print, for --previous.
        livenessProbe: {
          exec: { command: ['/bin/sh', '-c', 'exit 1'] },
          initialDelaySeconds: 3,
          periodSeconds: 1,
          failureThreshold: 1,
        },
      },
      { restartPolicy: 'Always', terminationGracePeriodSeconds: 1 },
    );
    const restarted = await podUntil(
      'unhealthy',
      'restarted',
      (p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1,
    );
    expect(restarted.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode).toBeGreaterThan(128);
    expect(await kubectl('logs', 'unhealthy', '--previous')).toBe('started\n');
  }, 150_000);
});

describe('Jobs through the real Job controller', () => {
  const job = async (
    name: string,
    command: string,
    spec: { backoffLimit?: number; activeDeadlineSeconds?: number } = {},
  ) => {
    await batch.createNamespacedJob({
      namespace,
      body: {
        metadata: { name },
        spec: {
          backoffLimit: 0,
          ...spec,
          template: {
            spec: {
              restartPolicy: 'Never',
              terminationGracePeriodSeconds: 1,
              containers: [
                { name: 'main', image: 'bpa.local/test/shell:1', command: ['/bin/sh', '-c', command] },
              ],
            },
          },
        },
      },
    });
    return waitFor(
      async () => {
        const current = await batch.readNamespacedJob({ name, namespace });
        const done = current.status?.conditions?.find(
          (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
        );
        return done ? { type: done.type, reason: done.reason } : undefined;
      },
      { what: `job ${name} finished`, timeoutMs: 120_000, intervalMs: 500 },
    );
  };

  it('ends Complete, Failed/BackoffLimitExceeded and Failed/DeadlineExceeded', async () => {
    const [ok, failed, overrun] = await Promise.all([
      job('exit-0', 'echo done; exit 0'),
      job('exit-1', 'echo failing >&2; exit 1'),
      job('overrun', 'sleep 300', { activeDeadlineSeconds: 3 }),
    ]);
    expect(ok).toEqual({ type: 'Complete', reason: 'CompletionsReached' });
    expect(failed).toEqual({ type: 'Failed', reason: 'BackoffLimitExceeded' });
    expect(overrun).toEqual({ type: 'Failed', reason: 'DeadlineExceeded' });
    const pods = await core.listNamespacedPod({ namespace, labelSelector: 'job-name=exit-1' });
    const terminated = pods.items[0]?.status?.containerStatuses?.[0]?.state?.terminated;
    expect(terminated).toMatchObject({ exitCode: 1, reason: 'Error' });
    expect(await kubectl('logs', `job/exit-1`)).toBe('failing\n');
  }, 150_000);
});

describe('garbage collection', () => {
  it('deleting the Deployment removes its ReplicaSet and pods through the real garbage collector', async () => {
    const before = await core.listNamespacedPod({ namespace, labelSelector: 'app=web' });
    expect(before.items.length).toBe(2);
    await apps.deleteNamespacedDeployment({ name: 'web', namespace, propagationPolicy: 'Background' });
    await waitFor(
      async () => {
        const [pods, sets] = await Promise.all([
          core.listNamespacedPod({ namespace, labelSelector: 'app=web' }),
          apps.listNamespacedReplicaSet({ namespace, labelSelector: 'app=web' }),
        ]);
        return pods.items.length === 0 && sets.items.length === 0 ? true : undefined;
      },
      { what: 'web pods and ReplicaSet gone', timeoutMs: 90_000, intervalMs: 500 },
    );
    // Their processes are gone too: nothing answers on the old addresses.
    for (const pod of before.items) {
      await expect(httpGet(pod.status?.podIP ?? '', 8080, '/whoami')).rejects.toThrow();
    }
  }, 150_000);
});

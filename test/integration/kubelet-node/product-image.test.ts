/**
 * A product image as a pod of the real node (issue 24 item 5): host-lookup's image, built by
 * `npm run images`' own code (local/images) into a directory of this file's, imported into the
 * node's containerd with ctr, and run as the manifests define it: manifests/ rendered by kustomize
 * with the build's images Component (the image by digest), then the local Serving overlay that
 * turns the Knative Service into a Deployment and a ClusterIP Service, applied with bpa-config and
 * host-lookup's ServiceAccount and RBAC, unchanged (securityContext, probes, resources as written).
 * The kubelet's own readiness probe makes the pod Ready; `kubectl exec` (kube-apiserver -> the
 * kubelet -> containerd) shows the user and the read-only root; the container's cgroup and process
 * are read on the machine; a busybox pod asks /health/readiness through the ClusterIP.
 * Root only (namespaces, cgroups, mounts, mmdebstrap for the images' roots): otherwise it skips.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BatchV1Api, CoreV1Api, type KubernetesObject, type V1Deployment } from '@kubernetes/client-node';
import {
  applyObjects,
  startControlPlane,
  waitFor,
  type ControlPlane,
} from '../../../local/control-plane/index.js';
import { buildProjectImages } from '../../../local/images/main.js';
import {
  busyboxImage,
  kubeletNodeApiAddress,
  startKubeletNode,
  writeBusyboxImage,
  type KubeletNode,
} from '../../../local/kubelet-node/index.js';
import {
  cgroupValue,
  containerCgroup,
  processStatus,
  renderWithImages,
  watchPodTimes,
  type PodTimes,
} from '../../support/product-image.js';

const notRoot = process.getuid?.() !== 0;
if (notRoot) process.stderr.write('[product-image] skipping: the real node and the image build need root\n');
// Skipped only without root: the real node needs namespaces, cgroups and mounts (CI runs as root,
// so there it always runs); the reason is also printed on stderr.
const describeAsRoot = notRoot ? describe.skip : describe;

const namespace = 'bpa-system';
const name = 'host-lookup';
const selector = `serving.knative.dev/service=${name}`;
let controlPlane: ControlPlane | undefined;
let node: KubeletNode | undefined;
let scratch = '';
let deployment: V1Deployment | undefined;
let imageReference = '';
let times: PodTimes = {};
let stopWatch = () => undefined as void;

const core = () => {
  if (!controlPlane) throw new Error('no control plane');
  return controlPlane.kubeConfig.makeApiClient(CoreV1Api);
};
const kubectl = async (args: string[]) => {
  if (!controlPlane) throw new Error('no control plane');
  return promisify(execFile)(
    'kubectl',
    ['--kubeconfig', controlPlane.kubeconfigPath, '-n', namespace, ...args],
    {
      encoding: 'utf8',
      timeout: 30_000,
    },
  ).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof error.code === 'number' ? error.code : -1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  );
};
const servingContainer = () => {
  const container = deployment?.spec?.template.spec?.containers.find((c) => c.name === name);
  if (!container) throw new Error(`the rendered Deployment has no container ${name}`);
  return container;
};
const runningPod = async () => {
  const pod = times.pod;
  const podName = pod?.metadata?.name;
  if (!podName) throw new Error('no host-lookup pod seen');
  const current = await core().readNamespacedPod({ name: podName, namespace });
  const containerId = current.status?.containerStatuses?.find((s) => s.name === name)?.containerID;
  if (!containerId) throw new Error(`pod ${podName} has no running ${name} container`);
  return { podName, containerId };
};

describeAsRoot('a product image (host-lookup) as a pod of the real node', () => {
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'product-image-test-'));
    const built = buildProjectImages({
      only: [name],
      out: join(scratch, 'images'),
      component: join(scratch, 'component'),
      log: () => undefined,
    });
    const image = built.images.find((i) => i.name === name);
    if (!image) throw new Error('host-lookup was not built');
    imageReference = `localhost/bpa-functions/${name}@${image.digest}`;
    const objects = renderWithImages(join(scratch, 'component'));
    // What host-lookup runs with: its namespace, bpa-config, its ServiceAccount and RBAC (the
    // BareMetalHost Role lands in BMH_NAMESPACE), the Deployment and Service of its ksvc.
    const wanted = objects.filter(
      (o) =>
        (o.kind === 'Namespace' && o.metadata?.name === namespace) ||
        (o.kind === 'ConfigMap' && o.metadata?.name === 'bpa-config') ||
        (o.kind === 'ServiceAccount' && o.metadata?.name === name) ||
        (o.apiVersion?.startsWith('rbac.authorization.k8s.io/') && o.metadata?.name?.includes(name)) ||
        ((o.kind === 'Deployment' || o.kind === 'Service') && o.metadata?.name === name),
    );
    deployment = wanted.find((o) => o.kind === 'Deployment') as V1Deployment | undefined;
    const extraNamespaces = [
      ...new Set(
        wanted.map((o) => o.metadata?.namespace).filter((ns): ns is string => !!ns && ns !== namespace),
      ),
    ];
    const busybox = writeBusyboxImage(scratch);
    controlPlane = await startControlPlane({
      controllers: true,
      handleSignals: false,
      advertiseAddress: kubeletNodeApiAddress,
    });
    node = await startKubeletNode({ controlPlane, images: [image.archive, busybox.path] });
    const namespaces: KubernetesObject[] = extraNamespaces.map((ns) => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: ns },
    }));
    const [first, ...rest] = wanted.filter((o) => o.kind !== 'Deployment');
    await applyObjects(controlPlane.kubeConfig, [...(first ? [first] : []), ...namespaces, ...rest]);
    // The pod's projected token volume needs the namespace's kube-root-ca.crt (root-ca publisher).
    await waitFor(
      async () =>
        (await core()
          .readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace })
          .catch(() => undefined))
          ? true
          : undefined,
      { what: `kube-root-ca.crt in ${namespace}`, timeoutMs: 30_000 },
    );
    const watch = await watchPodTimes(controlPlane.kubeConfig, namespace, selector);
    times = watch.times;
    stopWatch = watch.stop;
    if (deployment) await applyObjects(controlPlane.kubeConfig, [deployment]);
  }, 300_000);

  afterAll(async () => {
    stopWatch();
    await node?.stop();
    await controlPlane?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }, 120_000);

  it('renders host-lookup by digest, with the securityContext, probes and limits of the manifests', () => {
    const container = servingContainer();
    expect(container.image).toBe(imageReference);
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(container.readinessProbe?.httpGet).toMatchObject({ path: '/health/readiness', port: 8080 });
    expect(container.livenessProbe?.httpGet).toMatchObject({ path: '/health/liveness', port: 8080 });
    expect(container.resources?.limits).toEqual({ cpu: '1', memory: '384Mi' });
  });

  it('becomes Ready through its own readiness probe, and says how long scheduled -> Ready took', async () => {
    // A pull (nothing is pulled here) or a crash ends the wait at once, with the node's logs.
    const failure = () => {
      const status = times.pod?.status?.containerStatuses?.[0];
      const waiting = status?.state?.waiting;
      if (waiting?.reason && /Err|BackOff|Invalid/.test(waiting.reason))
        return `${waiting.reason}: ${waiting.message ?? ''}\n${node?.logTails() ?? ''}`;
      const terminated = status?.lastState?.terminated;
      return terminated ? `exited ${terminated.exitCode} (${terminated.reason ?? ''})` : undefined;
    };
    const pod = await waitFor(async () => (times.readyAt !== undefined ? times.pod : undefined), {
      what: `the ${name} pod Ready`,
      timeoutMs: 120_000,
      intervalMs: 50,
      abortIf: failure,
    });
    expect(pod?.spec?.nodeName).toBe(node?.name);
    expect(pod?.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    const ms = (times.readyAt ?? 0) - (times.scheduledAt ?? 0);
    const conditions = pod?.status?.conditions ?? [];
    const at = (type: string) => conditions.find((c) => c.type === type)?.lastTransitionTime;
    process.stdout.write(
      `[product-image] ${name} scheduled -> Ready: ${ms} ms (watch); conditions PodScheduled ${String(at('PodScheduled'))}, Ready ${String(at('Ready'))}\n`,
    );
    expect(ms).toBeGreaterThanOrEqual(0);
  }, 150_000);

  it('runs as uid 65532 with no capabilities, and its root filesystem refuses a write (kubectl exec)', async () => {
    const { podName } = await runningPod();
    const id = await kubectl(['exec', podName, '-c', name, '--', 'id', '-u']);
    expect({ code: id.code, uid: id.stdout.trim(), stderr: id.stderr }).toEqual({
      code: 0,
      uid: '65532',
      stderr: '',
    });
    const write = await kubectl(['exec', podName, '-c', name, '--', 'touch', '/written']);
    expect(write.code).not.toBe(0);
    expect(write.stderr).toContain('Read-only file system');
    // The server itself, read on the machine: the process in the container's cgroup.
    const { containerId } = await runningPod();
    const memory = containerCgroup('memory', node?.cleanupTarget.cgroupName ?? '', containerId);
    const pids = cgroupValue(memory, 'cgroup.procs').split('\n').filter(Boolean).map(Number);
    const server = pids
      .map((pid) => ({ pid, status: processStatus(pid) }))
      .find((p) => p.status.Name === 'node');
    expect(server?.status.Uid).toBe('65532\t65532\t65532\t65532');
    expect(server?.status.CapEff).toBe('0000000000000000');
    expect(server?.status.NoNewPrivs).toBe('1');
  }, 60_000);

  it("carries the manifest's limits in its cgroups (memory 384Mi, cpu 1)", async () => {
    const { containerId } = await runningPod();
    const cgroupName = node?.cleanupTarget.cgroupName ?? '';
    const memory = containerCgroup('memory', cgroupName, containerId);
    expect(cgroupValue(memory, 'memory.limit_in_bytes')).toBe(String(384 * 2 ** 20));
    const cpu = containerCgroup('cpu', cgroupName, containerId);
    // limits.cpu 1: one period's worth of quota.
    expect(Number(cgroupValue(cpu, 'cpu.cfs_quota_us'))).toBe(Number(cgroupValue(cpu, 'cpu.cfs_period_us')));
  });

  it('answers /health/readiness through its ClusterIP Service, from another pod', async () => {
    const service = await core().readNamespacedService({ name, namespace });
    expect(service.spec?.type).toBe('ClusterIP');
    const batch = controlPlane?.kubeConfig.makeApiClient(BatchV1Api);
    if (!batch) throw new Error('no control plane');
    await batch.createNamespacedJob({
      namespace,
      body: {
        metadata: { name: 'readiness-client' },
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels: { job: 'readiness-client' } },
            spec: {
              restartPolicy: 'Never',
              containers: [
                {
                  name: 'main',
                  image: busyboxImage,
                  imagePullPolicy: 'Never',
                  // The Service's DNS name (CoreDNS) and port 80 (kube-proxy) -> the pod's 8080.
                  command: [
                    'sh',
                    '-c',
                    `for i in $(seq 30); do printf 'GET /health/readiness HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${name}.${namespace}.svc.cluster.local 80 > /tmp/out && grep -q ready /tmp/out && cat /tmp/out && exit 0; sleep 1; done; cat /tmp/out; exit 1`,
                  ],
                },
              ],
            },
          },
        },
      },
    });
    await waitFor(
      async () => {
        const job = await batch.readNamespacedJob({ name: 'readiness-client', namespace });
        if (job.status?.failed) {
          const [pod] = (await core().listNamespacedPod({ namespace, labelSelector: 'job=readiness-client' }))
            .items;
          const log = await core()
            .readNamespacedPodLog({ name: pod?.metadata?.name ?? '', namespace })
            .catch(() => '(no log)');
          throw new Error(`the client could not reach host-lookup through its Service: ${log}`);
        }
        return job.status?.succeeded === 1 ? true : undefined;
      },
      { what: 'the readiness client', timeoutMs: 90_000, intervalMs: 500 },
    );
    const [client] = (await core().listNamespacedPod({ namespace, labelSelector: 'job=readiness-client' }))
      .items;
    const log = await core().readNamespacedPodLog({ name: client?.metadata?.name ?? '', namespace });
    expect(log).toMatch(/^HTTP\/1\.[01] 200 OK/);
    // The body is the last line (HTTP/1.0: the server closes after it).
    expect(JSON.parse(log.trim().split('\n').pop() ?? '')).toEqual({ status: 'ready' });
  }, 120_000);
});

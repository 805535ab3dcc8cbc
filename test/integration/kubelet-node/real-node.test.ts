/**
 * The real node (local/kubelet-node): containerd 2.4.2 + kubelet and kube-proxy 1.36.3 in network
 * and mount namespaces of their own, against a control plane of this file's own with the real
 * controllers (so the run's shared node never sees these pods). Images are never
 * pulled: the tests' busybox image is imported with ctr. Every check crosses a real process
 * boundary: the Job controller ends a Job, the kubelet runs readiness probes, kube-proxy's nftables
 * rules carry a ClusterIP, the kernel's memory cgroup kills a container, kube-apiserver streams a
 * log from the kubelet. Root only (namespaces, cgroups, mounts): otherwise it skips, saying why.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AppsV1Api, BatchV1Api, CoreV1Api, type V1Pod, type V1PodSpec } from '@kubernetes/client-node';
import { startControlPlane, waitFor, type ControlPlane } from '../../../local/control-plane/index.js';
import {
  busyboxImage,
  kubeletNodeApiAddress,
  startKubeletNode,
  writeBusyboxImage,
  type KubeletNode,
} from '../../../local/kubelet-node/index.js';
import { until } from '../../support/processes.js';

const notRoot = process.getuid?.() !== 0;
if (notRoot)
  process.stderr.write(
    '[kubelet-node] skipping the real node: it needs root (namespaces, cgroups, mounts)\n',
  );
// Skipped only without root: the real node needs namespaces, cgroups and mounts (CI runs as root,
// so there it always runs); the reason is also printed on stderr.
const describeAsRoot = notRoot ? describe.skip : describe;

const namespace = 'default';
let controlPlane: ControlPlane | undefined;
let node: KubeletNode | undefined;
let scratch = '';
/** The ClusterIP of Service `web` (made by the Deployment test). */
let webClusterIp = '';
const apis = () => {
  if (!controlPlane) throw new Error('no control plane');
  const kc = controlPlane.kubeConfig;
  return {
    core: kc.makeApiClient(CoreV1Api),
    batch: kc.makeApiClient(BatchV1Api),
    apps: kc.makeApiClient(AppsV1Api),
  };
};
/** A pod spec on this node, from the imported image only. */
const onNode = (spec: Omit<V1PodSpec, 'nodeSelector'>): V1PodSpec => ({
  ...spec,
  nodeSelector: { 'kubernetes.io/hostname': node?.name ?? '' },
  containers: spec.containers.map((container) => ({
    image: busyboxImage,
    imagePullPolicy: 'Never',
    ...container,
  })),
});
const podsOf = async (selector: string): Promise<V1Pod[]> =>
  (await apis().core.listNamespacedPod({ namespace, labelSelector: selector })).items;

describeAsRoot('the real node (containerd + kubelet + kube-proxy)', () => {
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'kubelet-node-test-'));
    const image = writeBusyboxImage(scratch);
    // Advertised on the node's relayed address: the `kubernetes` Service reaches it from a pod.
    controlPlane = await startControlPlane({
      controllers: true,
      handleSignals: false,
      advertiseAddress: kubeletNodeApiAddress,
    });
    node = await startKubeletNode({ controlPlane, images: [image.path] });
    // The default ServiceAccount (the token controller) must exist before a pod is admitted.
    await waitFor(
      async () =>
        (await apis().core.readNamespacedServiceAccount({ name: 'default', namespace })) ? true : undefined,
      { what: 'the default ServiceAccount', timeoutMs: 30_000 },
    );
  }, 240_000);

  afterAll(async () => {
    await node?.stop();
    await controlPlane?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }, 120_000);

  it('registers a Ready Node that runs containerd 2.4.2 and kubelet v1.36.3', async () => {
    const registered = await apis().core.readNode({ name: node?.name ?? '' });
    const ready = registered.status?.conditions?.find((condition) => condition.type === 'Ready');
    expect(ready?.status).toBe('True');
    expect(registered.status?.nodeInfo?.containerRuntimeVersion).toMatch(/^containerd:\/\/2\.4\.2/);
    expect(registered.status?.nodeInfo?.kubeletVersion).toBe('v1.36.3');
    expect(registered.status?.addresses).toContainEqual({
      type: 'InternalIP',
      address: node?.addresses.nodeIp,
    });
  });

  it("runs a Job of 2 completions to Complete, and serves its pods' logs through the kubelet", async () => {
    const { batch } = apis();
    await batch.createNamespacedJob({
      namespace,
      body: {
        metadata: { name: 'two' },
        spec: {
          completions: 2,
          parallelism: 1,
          backoffLimit: 0,
          template: {
            metadata: { labels: { job: 'two' } },
            spec: onNode({
              restartPolicy: 'Never',
              containers: [{ name: 'main', command: ['sh', '-c', 'echo "done in $(hostname)"'] }],
            }),
          },
        },
      },
    });
    const job = await waitFor(
      async () => {
        const current = await batch.readNamespacedJob({ name: 'two', namespace });
        const failed = current.status?.conditions?.find(
          (condition) => condition.type === 'Failed' && condition.status === 'True',
        );
        if (failed) throw new Error(`Job failed: ${failed.message}`);
        return current.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')
          ? current
          : undefined;
      },
      { what: 'Job two Complete', timeoutMs: 90_000, intervalMs: 500 },
    );
    expect(job.status?.succeeded).toBe(2);
    const pods = await podsOf('job=two');
    expect(pods).toHaveLength(2);
    for (const pod of pods) {
      const name = pod.metadata?.name ?? '';
      // kube-apiserver -> the kubelet's :10250 (webhook authn/authz) -> containerd's log file.
      const log = await apis().core.readNamespacedPodLog({ name, namespace, container: 'main' });
      expect(log).toBe(`done in ${name}\n`);
    }
  }, 120_000);

  it('brings a Deployment with a readiness probe to 2 ready replicas, reached through a ClusterIP Service', async () => {
    const { apps, core, batch } = apis();
    const token = `served-${Date.now()}`;
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: onNode({
              containers: [
                {
                  name: 'httpd',
                  command: [
                    'sh',
                    '-c',
                    `mkdir -p /tmp/www && echo ${token} > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www`,
                  ],
                  ports: [{ containerPort: 8080 }],
                  readinessProbe: { httpGet: { path: '/index.html', port: 8080 }, periodSeconds: 1 },
                },
              ],
            }),
          },
        },
      },
    });
    await waitFor(
      async () => {
        const deployment = await apps.readNamespacedDeployment({ name: 'web', namespace });
        return deployment.status?.readyReplicas === 2 ? true : undefined;
      },
      { what: 'Deployment web with 2 ready replicas', timeoutMs: 90_000, intervalMs: 500 },
    );
    const service = await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    const clusterIp = service.spec?.clusterIP ?? '';
    webClusterIp = clusterIp;
    expect(clusterIp).toMatch(/^10\.0\.0\./);
    // A client pod asks the ClusterIP (port 80) until kube-proxy has programmed it; only its
    // rules turn 10.0.0.x:80 into a pod's :8080.
    await batch.createNamespacedJob({
      namespace,
      body: {
        metadata: { name: 'client' },
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels: { job: 'client' } },
            spec: onNode({
              restartPolicy: 'Never',
              containers: [
                {
                  name: 'main',
                  command: [
                    'sh',
                    '-c',
                    `for i in $(seq 60); do printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${clusterIp} 80 > /tmp/out && grep -q ${token} /tmp/out && cat /tmp/out && exit 0; sleep 1; done; exit 1`,
                  ],
                },
              ],
            }),
          },
        },
      },
    });
    await waitFor(
      async () => {
        const job = await batch.readNamespacedJob({ name: 'client', namespace });
        if (job.status?.failed) throw new Error('the client could not reach the Service');
        return job.status?.succeeded === 1 ? true : undefined;
      },
      { what: 'the Service client', timeoutMs: 90_000, intervalMs: 500 },
    );
    const [client] = await podsOf('job=client');
    const log = await core.readNamespacedPodLog({ name: client?.metadata?.name ?? '', namespace });
    expect(log).toContain('200 OK');
    expect(log).toContain(token);
  }, 200_000);

  it("resolves the Service by name through the node's CoreDNS (search path and FQDN)", async () => {
    const { core } = apis();
    expect(webClusterIp).not.toBe('');
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'resolver' },
        spec: onNode({
          restartPolicy: 'Never',
          containers: [
            {
              name: 'main',
              // busybox nslookup asks the nameserver of the pod's resolv.conf, which the kubelet wrote.
              command: [
                'sh',
                '-c',
                'cat /etc/resolv.conf; for i in $(seq 30); do nslookup web.default.svc.cluster.local && break; sleep 1; done; ' +
                  "printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc -w 2 web 80",
              ],
            },
          ],
        }),
      },
    });
    await waitFor(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'resolver', namespace });
        return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed' ? true : undefined;
      },
      { what: 'pod resolver done', timeoutMs: 90_000, intervalMs: 500 },
    );
    const log = await core.readNamespacedPodLog({ name: 'resolver', namespace });
    expect(log).toContain(`nameserver ${node?.addresses.nodeIp}`);
    expect(log).toContain('search default.svc.cluster.local svc.cluster.local cluster.local');
    expect(log).toMatch(new RegExp(`Address:\\s+${webClusterIp.replaceAll('.', '\\.')}`));
    // The short name, through the search path, then kube-proxy.
    expect(log).toContain('200 OK');
  }, 120_000);

  it('lets a pod reach kube-apiserver through the `kubernetes` Service with its ServiceAccount token', async () => {
    const { core } = apis();
    const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
    const body = '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}';
    // An HTTP/1.0 request over TLS (openssl s_client), verified against the kube-root-ca.crt the
    // pod was given, to the Service's DNS name; the token says who asks.
    const script = [
      `token=$(cat ${sa}/token);`,
      `(printf 'POST /apis/authentication.k8s.io/v1/selfsubjectreviews HTTP/1.0\\r\\nHost: kubernetes.default.svc\\r\\n';`,
      `printf 'Authorization: Bearer %s\\r\\nContent-Type: application/json\\r\\nContent-Length: ${body.length}\\r\\n\\r\\n%s' "$token" '${body}'; sleep 3)`,
      `| openssl s_client -quiet -verify_return_error -CAfile ${sa}/ca.crt -servername kubernetes.default.svc -connect kubernetes.default.svc:443`,
    ].join(' ');
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'api-client' },
        spec: onNode({
          restartPolicy: 'Never',
          containers: [{ name: 'main', command: ['sh', '-c', `${script}; true`] }],
        }),
      },
    });
    await waitFor(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'api-client', namespace });
        return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed' ? true : undefined;
      },
      { what: 'pod api-client done', timeoutMs: 90_000, intervalMs: 500 },
    );
    const log = await core.readNamespacedPodLog({ name: 'api-client', namespace });
    expect(log).toMatch(/HTTP\/1\.[01] 201 Created/);
    expect(log).toContain('"username":"system:serviceaccount:default:default"');
  }, 120_000);

  it('enforces a memory limit: a container that outgrows 32Mi is OOMKilled', async () => {
    const { core } = apis();
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'hog' },
        spec: onNode({
          restartPolicy: 'Never',
          containers: [
            {
              name: 'main',
              // 64 MiB held in one shell variable.
              command: ['sh', '-c', 'x=$(head -c 67108864 /dev/zero | tr "\\0" a); echo survived ${#x}'],
              resources: { limits: { memory: '32Mi' }, requests: { memory: '32Mi' } },
            },
          ],
        }),
      },
    });
    const terminated = await waitFor(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'hog', namespace });
        return pod.status?.containerStatuses?.[0]?.state?.terminated;
      },
      { what: 'pod hog terminated', timeoutMs: 90_000, intervalMs: 500 },
    );
    expect(terminated.reason).toBe('OOMKilled');
    expect(terminated.exitCode).toBe(137);
  }, 120_000);

  it('runs a second node beside the first, with addresses, interface and cgroups of its own', async () => {
    if (!controlPlane || !node) throw new Error('no cluster');
    const second = await startKubeletNode({ controlPlane });
    try {
      expect(second.name).not.toBe(node.name);
      expect(second.addresses.nodeIp).not.toBe(node.addresses.nodeIp);
      expect(second.addresses.podCidr).not.toBe(node.addresses.podCidr);
      expect(second.cleanupTarget.cgroupName).not.toBe(node.cleanupTarget.cgroupName);
      const ready = await apis().core.readNode({ name: second.name });
      expect(ready.status?.conditions?.find((condition) => condition.type === 'Ready')?.status).toBe('True');
    } finally {
      await second.stop();
    }
    expect(second.leftovers()).toEqual([]);
    // The first node is untouched by the second's clean-up.
    const first = await apis().core.readNode({ name: node.name });
    expect(first.status?.conditions?.find((condition) => condition.type === 'Ready')?.status).toBe('True');
  }, 120_000);

  it('stops leaving no process, cgroup, interface or directory, and deletes its Node', async () => {
    const running = node;
    if (!running) throw new Error('no node');
    expect(running.leftovers().length).toBeGreaterThan(0);
    await running.stop();
    node = undefined;
    expect(running.leftovers()).toEqual([]);
    // The node's namespace name is free again: the kernel gives the lowest free number to the next
    // namespace made (here likely one of these), which is not the node's and is no leftover of it.
    const strangers = Array.from({ length: 5 }, () =>
      spawn('unshare', ['--mount', 'sleep', '60'], { stdio: 'ignore' }),
    );
    try {
      const own = readlinkSync('/proc/self/ns/mnt');
      await until(
        () => strangers.every((p) => p.pid && readlinkSync(`/proc/${p.pid}/ns/mnt`) !== own),
        'the strangers in namespaces of their own',
        10_000,
      );
      const names = strangers.map((p) => readlinkSync(`/proc/${p.pid}/ns/mnt`));
      process.stderr.write(
        `[kubelet-node] stopped node's namespace ${running.cleanupTarget.mountNamespace}; strangers' ${names.join(' ')}\n`,
      );
      expect(running.leftovers()).toEqual([]);
    } finally {
      for (const stranger of strangers) stranger.kill('SIGKILL');
    }
    await expect(apis().core.readNode({ name: running.name })).rejects.toThrow();
  }, 120_000);
});

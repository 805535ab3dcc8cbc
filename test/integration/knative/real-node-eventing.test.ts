/**
 * Real Knative Eventing on the real node (issue 24 item 5), on a cluster of this file's own: the
 * control plane with its controllers and one real node (containerd + kubelet + kube-proxy,
 * local/kubelet-node). Knative's components are the images local/images/knative.ts builds from
 * engines/build.sh knative's binaries, imported into the node; config/ is installed with every
 * `ko://` reference resolved to them by digest (installKnativeOnRealNode). A Broker and a Trigger
 * to Knative's event_display (its own image, a Deployment behind a ClusterIP Service) then carry
 * a CloudEvent posted to the MT broker's ingress pod: ingress -> in-memory channel dispatcher ->
 * filter -> event_display, through kube-proxy's Services and CoreDNS; the event is read back from
 * event_display's log through the kubelet. Then Serving's admission webhook, from its image
 * likewise, refuses a ksvc over Serving's own timeout limit (a dry run).
 * Root only (namespaces, cgroups, mounts): it skips otherwise.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import {
  applyObjects,
  startControlPlane,
  waitFor,
  type ControlPlane,
} from '../../../local/control-plane/index.js';
import { knativeNamespace, type KnativeInstall } from '../../../local/knative/install.js';
import {
  brokerIngressAddress,
  installKnativeOnRealNode,
  installServingWebhookOnRealNode,
} from '../../../local/knative/real-node.js';
import {
  kubeletNodeApiAddress,
  startKubeletNode,
  writeBusyboxImage,
  type KubeletNode,
} from '../../../local/kubelet-node/index.js';
import { waitForKnativeReady } from '../../support/knative-objects.js';
import { eventDisplayObjects } from '../../support/real-node-knative.js';

const notRoot = process.getuid?.() !== 0;
if (notRoot) process.stderr.write('[real-node-eventing] skipping: the real node needs root\n');
// Skipped only without root: the real node needs namespaces, cgroups and mounts (CI runs as root,
// so there it always runs); the reason is also printed on stderr.
const describeAsRoot = notRoot ? describe.skip : describe;

const namespace = 'rn-eventing';
let controlPlane: ControlPlane | undefined;
let node: KubeletNode | undefined;
let install: (KnativeInstall & { images: Record<string, string> }) | undefined;
let scratch = '';

const kubeConfig = () => {
  if (!controlPlane) throw new Error('no control plane');
  return controlPlane.kubeConfig;
};

describeAsRoot('real Knative Eventing on the real node, from images', () => {
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'rn-eventing-'));
    controlPlane = await startControlPlane({
      controllers: true,
      handleSignals: false,
      advertiseAddress: kubeletNodeApiAddress,
    });
    node = await startKubeletNode({ controlPlane, images: [writeBusyboxImage(scratch).path] });
    const started = node;
    install = await installKnativeOnRealNode({
      kubeConfig: kubeConfig(),
      node: started,
      log: (line) => process.stderr.write(`[real-node-eventing] ${line}\n`),
    });
  }, 600_000);

  afterAll(async () => {
    if (node && install === undefined) process.stderr.write(`${node.logTails(20)}\n`);
    await node?.stop();
    await controlPlane?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }, 120_000);

  it("runs Knative's Deployments from its images by digest, never pulled, as Knative ships them", async () => {
    const apps = kubeConfig().makeApiClient(AppsV1Api);
    const deployments = (await apps.listNamespacedDeployment({ namespace: knativeNamespace })).items;
    const running = deployments.filter((d) => (d.spec?.replicas ?? 1) > 0);
    expect(running.map((d) => d.metadata?.name).sort()).toEqual(
      expect.arrayContaining([
        'eventing-controller',
        'eventing-webhook',
        'mt-broker-ingress',
        'mt-broker-filter',
      ]),
    );
    for (const d of deployments)
      for (const c of d.spec?.template.spec?.containers ?? []) {
        expect(c.image).toMatch(/^localhost\/bpa-functions\/knative-eventing-[a-z-]+@sha256:[0-9a-f]{64}$/);
        expect(c.imagePullPolicy).toBe('Never');
        expect(c.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
        });
      }
    // The controller names the ApiServerSource adapter's image in its env, resolved as well.
    const controller = deployments.find((d) => d.metadata?.name === 'eventing-controller');
    const adapter = controller?.spec?.template.spec?.containers[0]?.env?.find(
      (e) => e.name === 'APISERVER_RA_IMAGE',
    );
    expect(adapter?.value).toBe(install?.images['ko://knative.dev/eventing/cmd/apiserver_receive_adapter']);
    const pods = (
      await kubeConfig().makeApiClient(CoreV1Api).listNamespacedPod({ namespace: knativeNamespace })
    ).items;
    expect(pods.length).toBeGreaterThanOrEqual(running.length);
    for (const pod of pods) {
      expect(pod.spec?.nodeName).toBe(node?.name);
      expect(pod.status?.phase).toBe('Running');
      expect(pod.status?.containerStatuses?.[0]?.imageID).toContain('sha256:');
    }
  });

  it('delivers a CloudEvent posted to the MT broker ingress through a Trigger to event_display', async () => {
    const eventDisplay = install?.images['ko://knative.dev/eventing/cmd/event_display'] ?? '';
    expect(eventDisplay).toMatch(/@sha256:/);
    const objects: KubernetesObject[] = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
      ...eventDisplayObjects(namespace, 'display', eventDisplay),
      {
        apiVersion: 'eventing.knative.dev/v1',
        kind: 'Broker',
        metadata: { name: 'default', namespace },
        spec: {},
      } as KubernetesObject,
      {
        apiVersion: 'eventing.knative.dev/v1',
        kind: 'Trigger',
        metadata: { name: 'to-display', namespace },
        spec: {
          broker: 'default',
          filter: { attributes: { type: 'bpa.test.real-node' } },
          subscriber: { ref: { apiVersion: 'v1', kind: 'Service', name: 'display' } },
        },
      } as KubernetesObject,
    ];
    await applyObjects(kubeConfig(), objects);
    for (const [kind, name] of [
      ['Broker', 'default'],
      ['Trigger', 'to-display'],
    ] as const)
      await waitForKnativeReady(
        kubeConfig(),
        { apiVersion: 'eventing.knative.dev/v1', kind, namespace, name },
        180_000,
      );
    const apps = kubeConfig().makeApiClient(AppsV1Api);
    await waitFor(
      async () =>
        ((await apps.readNamespacedDeployment({ name: 'display', namespace })).status?.readyReplicas ?? 0) >=
        1
          ? true
          : undefined,
      { what: 'event_display ready', timeoutMs: 120_000, intervalMs: 500 },
    );
    const ingress = await brokerIngressAddress(kubeConfig());
    const id = randomUUID();
    const post = async (type: string, eventId: string) =>
      fetch(`${ingress}/${namespace}/default`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'ce-specversion': '1.0',
          'ce-id': eventId,
          'ce-source': '/test/real-node-eventing',
          'ce-type': type,
        },
        body: JSON.stringify({ hello: 'real node' }),
      });
    // Not matched by the Trigger: must not reach event_display.
    expect((await post('bpa.test.other', `${id}-other`)).status).toBe(202);
    expect((await post('bpa.test.real-node', id)).status).toBe(202);
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const log = await waitFor(
      async () => {
        const [pod] = (await core.listNamespacedPod({ namespace, labelSelector: 'app=display' })).items;
        const text = await core.readNamespacedPodLog({ name: pod?.metadata?.name ?? '', namespace });
        return text.includes(`id: ${id}`) ? text : undefined;
      },
      { what: 'the event in event_display’s log', timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(log).toContain('type: bpa.test.real-node');
    expect(log).toContain('knativearrivaltime');
    expect(log).toContain('"hello": "real node"');
    expect(log).not.toContain(`${id}-other`);
  }, 360_000);

  it("runs Serving's admission webhook from its image, and Serving's own limits refuse a ksvc", async () => {
    const installed = await installServingWebhookOnRealNode({ kubeConfig: kubeConfig(), node: node! });
    expect(installed.workloads).toEqual(['deployment/webhook']);
    const apps = kubeConfig().makeApiClient(AppsV1Api);
    const webhook = await apps.readNamespacedDeployment({ name: 'webhook', namespace: 'knative-serving' });
    const container = webhook.spec?.template.spec?.containers[0];
    expect(container?.image).toMatch(
      /^localhost\/bpa-functions\/knative-serving-webhook@sha256:[0-9a-f]{64}$/,
    );
    expect(container?.imagePullPolicy).toBe('Never');
    const ksvc = (timeoutSeconds: number) => ({
      apiVersion: 'serving.knative.dev/v1',
      kind: 'Service',
      metadata: { name: 'limits' },
      spec: { template: { spec: { timeoutSeconds, containers: [{ image: 'bpa.local/limits:1' }] } } },
    });
    const custom = kubeConfig().makeApiClient(CustomObjectsApi);
    const create = (body: object) =>
      custom.createNamespacedCustomObject({
        group: 'serving.knative.dev',
        version: 'v1',
        plural: 'services',
        namespace: 'knative-serving',
        dryRun: 'All',
        body,
      });
    // The refusal's body is JSON (escaped again) inside the client's message: `<` comes escaped.
    await expect(create(ksvc(601))).rejects.toThrow(
      /denied the request: validation failed: expected 0 \S+= 601 \S+= 600: spec\.template\.spec\.timeoutSeconds/,
    );
    await expect(create(ksvc(600))).resolves.toMatchObject({ spec: { traffic: [{ latestRevision: true }] } });
  }, 300_000);
});

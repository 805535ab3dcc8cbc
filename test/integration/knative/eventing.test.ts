/**
 * Real Knative Eventing (knative.dev/eventing v0.49.2: its controller, webhook, MT channel broker,
 * in-memory channel, ingress and filter, built from its Go modules and installed from its own
 * config/ by the global setup, each component from its image) on the run's node: a real kubelet
 * with containerd (local/kubelet-node). Everything here is Knative's and Kubernetes' code.
 * Subscribers are the event recorder pod (test/fixtures/node/event-recorder.mjs).
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { AppsV1Api, CoreV1Api, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { waitFor } from '../../../local/control-plane/wait.js';
import { knativeNamespace } from '../../../local/knative/install.js';
import { useTestCluster } from '../../support/cluster.js';
import {
  brokerIngressBase,
  createObjects,
  describeOnKnative,
  mtBroker,
  startRecorder,
  waitForKnativeReady,
  waitForBrokerDelivery,
  type Recorder,
} from '../../support/knative.js';

const cluster = useTestCluster({ namespacePrefix: 'knative' });

const trigger = (name: string, brokerName: string, type: string, path: string): KubernetesObject =>
  ({
    apiVersion: 'eventing.knative.dev/v1',
    kind: 'Trigger',
    metadata: { name },
    spec: {
      broker: brokerName,
      filter: { attributes: { type } },
      subscriber: { ref: { apiVersion: 'v1', kind: 'Service', name: 'recorder' }, uri: path },
      delivery: { retry: 0 },
    },
  }) as KubernetesObject;

/** POSTs a binary-mode CloudEvent to a Broker's ingress from the test process. */
async function send(brokerName: string, type: string, id: string): Promise<Response> {
  return fetch(`${await brokerIngressBase(cluster.kubeConfig)}/${cluster.namespace}/${brokerName}`, {
    method: 'POST',
    headers: {
      'ce-specversion': '1.0',
      'ce-type': type,
      'ce-source': 'eventing.test',
      'ce-id': id,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ id }),
  });
}

const ready = (kind: string, name: string, apiVersion = 'eventing.knative.dev/v1') =>
  waitForKnativeReady(cluster.kubeConfig, { apiVersion, kind, namespace: cluster.namespace, name });

describeOnKnative('Knative Eventing on the one-machine cluster', () => {
  let recorder: Recorder;

  beforeAll(async () => {
    recorder = await startRecorder(cluster.kubeConfig, cluster.namespace);
    await createObjects(cluster.kubeConfig, cluster.namespace, [
      mtBroker('sync'),
      mtBroker('async', { async: true }),
      trigger('wanted', 'sync', 'test.wanted', '/ok'),
      trigger('unwanted', 'sync', 'test.unwanted', '/status/500'),
      trigger('sync-hold', 'sync', 'test.hold', '/hold'),
      trigger('async-hold', 'async', 'test.hold', '/hold'),
    ]);
    for (const name of ['sync', 'async']) await ready('Broker', name);
    for (const name of ['wanted', 'unwanted', 'sync-hold', 'async-hold']) await ready('Trigger', name);
    // Ready is the control plane's word; a probe through a Trigger made after the others shows
    // the data plane carries them too (waitForBrokerDelivery says why the two can differ).
    await createObjects(cluster.kubeConfig, cluster.namespace, [
      trigger('sync-probe', 'sync', 'test.probe', '/ok'),
      trigger('async-probe', 'async', 'test.probe', '/ok'),
    ]);
    for (const [name, broker] of [
      ['sync-probe', 'sync'],
      ['async-probe', 'async'],
    ] as const) {
      await ready('Trigger', name);
      await waitForBrokerDelivery({
        kubeConfig: cluster.kubeConfig,
        namespace: cluster.namespace,
        broker,
        recorder,
        probeType: 'test.probe',
      });
    }
  }, 240_000);

  afterAll(async () => {
    await recorder?.release().catch(() => undefined);
  });

  it("runs Knative's own config/: every component's pod on the run's node, from its image by digest", async () => {
    const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    const deployments = await apps.listNamespacedDeployment({ namespace: knativeNamespace });
    const names = deployments.items.map((d) => d.metadata?.name).sort();
    expect(names).toEqual(
      expect.arrayContaining([
        'eventing-controller',
        'eventing-webhook',
        'imc-controller',
        'imc-dispatcher',
        'mt-broker-controller',
        'mt-broker-filter',
        'mt-broker-ingress',
      ]),
    );
    const images = deployments.items.flatMap(
      (d) => d.spec?.template.spec?.containers.map((c) => c.image) ?? [],
    );
    // config/ names `ko://knative.dev/eventing/cmd/broker/ingress`; the install resolved it to the
    // image built from that binary, by digest (the global setup's map, local/knative/real-node.ts).
    const knativeImages = JSON.parse(process.env.BPA_TEST_KNATIVE_IMAGES ?? '{}') as Record<string, string>;
    const ingressImage = knativeImages['ko://knative.dev/eventing/cmd/broker/ingress'];
    expect(ingressImage).toMatch(/^localhost\/bpa-functions\/knative-eventing-[a-z-]+@sha256:[0-9a-f]{64}$/);
    expect(images).toContain(ingressImage);
    expect(images.filter((image) => image?.startsWith('ko://'))).toEqual([]);
    const pods = await cluster.kubeConfig
      .makeApiClient(CoreV1Api)
      .listNamespacedPod({ namespace: knativeNamespace });
    const running = pods.items.filter((p) => p.status?.phase === 'Running');
    expect(running.length).toBeGreaterThanOrEqual(7);
    for (const pod of running) expect(pod.spec?.nodeName).toBe(process.env.BPA_TEST_NODE);
  });

  it('routes by the Trigger attribute filter: the event reaches the matching subscriber only', async () => {
    const response = await send('sync', 'test.wanted', 'wanted-1');
    expect(response.status).toBe(202);
    const got = await waitFor(
      async () => {
        const received = await recorder.received();
        return received.some((r) => r.headers['ce-id'] === 'wanted-1') ? received : undefined;
      },
      { what: 'the recorder to get wanted-1', timeoutMs: 30_000, intervalMs: 300 },
    );
    const copies = got.filter((r) => r.headers['ce-id'] === 'wanted-1');
    expect(copies.map((r) => r.path)).toEqual(['/ok']);
    expect(copies[0]?.headers['ce-type']).toBe('test.wanted');
    // Knative's filter adds the arrival time; the source's attributes arrive unchanged.
    expect(copies[0]?.headers['ce-source']).toBe('eventing.test');
    expect(copies[0]?.headers['ce-knativearrivaltime']).toEqual(expect.any(String));
  });

  it('answers the producer at once when the Broker carries async-handler: a held subscriber does not hold the POST', async () => {
    const response = await send('async', 'test.hold', 'async-1');
    expect(response.status).toBe(202);
    // The POST came back; the subscriber gets the event and is still holding it.
    const held = await waitFor(
      async () => (await recorder.received()).find((r) => r.headers['ce-id'] === 'async-1'),
      { what: 'the recorder to get async-1', timeoutMs: 30_000, intervalMs: 300 },
    );
    expect(held.path).toBe('/hold');
    expect(held.answeredAt).toBeUndefined();
    await recorder.release();
  });

  it('holds the producer until the subscriber answers without async-handler (the in-memory channel is synchronous)', async () => {
    let answered: number | undefined;
    const post = send('sync', 'test.hold', 'sync-1').then((r) => {
      answered = r.status;
      return r;
    });
    const held = await waitFor(
      async () => (await recorder.received()).find((r) => r.headers['ce-id'] === 'sync-1'),
      { what: 'the recorder to get sync-1', timeoutMs: 30_000, intervalMs: 300 },
    );
    expect(held.answeredAt).toBeUndefined();
    // Give a stray early answer every chance to arrive: there must be none while it is held.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(answered).toBeUndefined();
    await recorder.release();
    expect((await post).status).toBe(202);
  });

  it("copies a Broker's async-handler annotation to its InMemoryChannel (how manifests/eventing/broker.yaml's takes effect)", async () => {
    const client = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
    const channel = await client.read({
      apiVersion: 'messaging.knative.dev/v1',
      kind: 'InMemoryChannel',
      metadata: { name: 'async-kne-trigger', namespace: cluster.namespace },
    });
    expect(channel.metadata?.annotations?.['messaging.knative.dev/async-handler']).toBe('true');
  });
});

/**
 * Knative objects and the event recorder pod (test/fixtures/node/event-recorder.mjs) for the
 * suites and the bench on real Knative Eventing. No jest here: the bench imports it too.
 */
import {
  AppsV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { z } from 'zod';
import { waitFor } from '../../local/control-plane/wait.js';
import { brokerIngressAddress } from '../../local/knative/real-node.js';

const conditionsSchema = z.looseObject({
  status: z
    .looseObject({
      conditions: z
        .array(z.looseObject({ type: z.string(), status: z.string(), message: z.string().optional() }))
        .optional(),
      address: z.looseObject({ url: z.string().optional() }).optional(),
    })
    .optional(),
});

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

/** Waits until a Knative object's Ready condition is True; resolves with its status. */
export async function waitForKnativeReady(kubeConfig: KubeConfig, ref: ObjectRef, timeoutMs = 120_000) {
  const client = KubernetesObjectApi.makeApiClient(kubeConfig);
  return waitFor(
    async () => {
      const object = conditionsSchema.parse(
        await client.read({
          apiVersion: ref.apiVersion,
          kind: ref.kind,
          metadata: { name: ref.name, namespace: ref.namespace },
        }),
      );
      const ready = object.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status === 'True') return object.status;
      throw new Error(`Ready ${ready?.status ?? 'absent'}: ${ready?.message ?? ''}`);
    },
    { what: `${ref.kind} ${ref.namespace}/${ref.name} to be Ready`, timeoutMs, intervalMs: 500 },
  );
}

/** Creates the objects (in `namespace` unless they name one). */
export async function createObjects(kubeConfig: KubeConfig, namespace: string, objects: KubernetesObject[]) {
  const client = KubernetesObjectApi.makeApiClient(kubeConfig);
  for (const object of objects)
    await client.create({ ...object, metadata: { namespace, ...object.metadata } } as KubernetesObject);
}

/**
 * The MT broker's ingress as the test process reaches it: a Ready ingress pod's IP (the machine
 * routes the pod subnet). Not the Service's ClusterIP: on the real node kube-proxy's rules live
 * in the node's network namespace only, so from the machine that address would take the
 * machine's default route, off this machine.
 */
export const brokerIngressBase = (kubeConfig: KubeConfig): Promise<string> =>
  brokerIngressAddress(kubeConfig);

export const recordSchema = z.array(
  z.object({
    path: z.string(),
    method: z.string(),
    headers: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
    body: z.string(),
    at: z.string(),
    answeredAt: z.string().optional(),
    status: z.number().optional(),
  }),
);
export type RecordedRequest = z.infer<typeof recordSchema>[number];

export interface Recorder {
  /** As Knative resolves it: the recorder's Service. */
  ref: { apiVersion: 'v1'; kind: 'Service'; name: string };
  /** `http://<pod IP>:8080/`: the recorder as this process reaches it. */
  baseUrl: string;
  /** What it received so far. */
  received(): Promise<RecordedRequest[]>;
  /** Answers every held request (path /hold). */
  release(): Promise<void>;
}

/** Starts the event recorder (a Deployment and a Service named `name`) and waits until it is ready. */
export async function startRecorder(
  kubeConfig: KubeConfig,
  namespace: string,
  name = 'recorder',
): Promise<Recorder> {
  const labels = { 'app.kubernetes.io/name': name };
  await createObjects(kubeConfig, namespace, [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: 'recorder',
                image: 'bpa.local/test/event-recorder:1',
                ports: [{ containerPort: 8080 }],
                readinessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 1 },
              },
            ],
          },
        },
      },
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name },
      spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    } as KubernetesObject,
  ]);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const podIp = await waitFor(
    async () => {
      const deployment = await apps.readNamespacedDeployment({ name, namespace });
      if ((deployment.status?.readyReplicas ?? 0) < 1) return undefined;
      const pods = await core.listNamespacedPod({
        namespace,
        labelSelector: `app.kubernetes.io/name=${name}`,
      });
      return pods.items.find((p) =>
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      )?.status?.podIP;
    },
    { what: `recorder ${namespace}/${name} to be ready`, timeoutMs: 60_000, intervalMs: 300 },
  );
  const base = `http://${podIp}:8080`;
  return {
    ref: { apiVersion: 'v1', kind: 'Service', name },
    baseUrl: `${base}/`,
    received: async () => recordSchema.parse(await (await fetch(`${base}/received`)).json()),
    release: async () => {
      await fetch(`${base}/release`, { method: 'POST' });
    },
  };
}

/**
 * Waits until an event posted to Broker `broker` reaches `recorder` through a Trigger of
 * `probeType` (routed to any path that answers 2xx): the data plane, not only the status, carries
 * the Broker's Triggers. Knative's Ready does not say that: v0.49.2's in-memory channel
 * dispatcher marks every subscriber of a channel Ready after each reconcile, also when it skipped
 * programming its fanout because the channel was not Ready at that moment
 * (pkg/reconciler/inmemorychannel/dispatcher/inmemorychannel.go: ReconcileKind patches the
 * subscriber status after reconcile() returned early), and programs the fanout on a later
 * reconcile. So create the probe Trigger after the others are Ready: the fanout that delivers a
 * probe was built from a channel spec that holds every subscription added before it. Probes are
 * posted once a second with ids `<broker>-probe-<n>`; filter them out where a test counts
 * deliveries.
 */
export async function waitForBrokerDelivery(options: {
  kubeConfig: KubeConfig;
  namespace: string;
  broker: string;
  recorder: Recorder;
  probeType: string;
  timeoutMs?: number;
}): Promise<void> {
  const { kubeConfig, namespace, broker, recorder, probeType } = options;
  const prefix = `${broker}-probe-`;
  let sent = 0;
  let lastStatus: number | string = 'none yet';
  await waitFor(
    async () => {
      const received = await recorder.received();
      if (received.some((r) => String(r.headers['ce-id']).startsWith(prefix))) return true;
      sent += 1;
      lastStatus = await fetch(`${await brokerIngressAddress(kubeConfig)}/${namespace}/${broker}`, {
        method: 'POST',
        headers: {
          'ce-specversion': '1.0',
          'ce-type': probeType,
          'ce-source': 'waitForBrokerDelivery',
          'ce-id': `${prefix}${sent}`,
          'content-type': 'application/json',
        },
        body: '{}',
      }).then(
        (response) => response.status,
        (error: unknown) => String(error),
      );
      throw new Error(`${sent} probes posted, none delivered; the ingress last answered ${lastStatus}`);
    },
    {
      what: `a probe event through Broker ${namespace}/${broker} to reach the recorder`,
      timeoutMs: options.timeoutMs ?? 60_000,
      intervalMs: 1000,
    },
  );
}

/** A Broker of the MT channel broker class; `async` copies the async handler to its channel. */
export function mtBroker(name: string, options: { async?: boolean } = {}): KubernetesObject {
  return {
    apiVersion: 'eventing.knative.dev/v1',
    kind: 'Broker',
    metadata: {
      name,
      annotations: {
        'eventing.knative.dev/broker.class': 'MTChannelBasedBroker',
        ...(options.async ? { 'messaging.knative.dev/async-handler': 'true' } : {}),
      },
    },
    spec: {},
  } as KubernetesObject;
}

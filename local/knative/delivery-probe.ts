/**
 * Proof that the manifests' Broker delivers, not only that its objects say Ready. On REAL Knative
 * Eventing (v0.49.2) the two can differ for a moment: the in-memory channel's dispatcher marks
 * every subscriber of a channel Ready after each reconcile, also when it skipped programming its
 * fanout because the channel was not Ready then (pkg/reconciler/inmemorychannel/dispatcher/
 * inmemorychannel.go: ReconcileKind patches the subscriber status after reconcile() returned
 * early), and programs it on a later reconcile. An event posted in between is answered 202 (the
 * Broker is asynchronous) and reaches no Trigger: the first Provisioning of a fresh install would
 * wait for the next sweep. So the stack adds a probe Trigger after every other is Ready, with the
 * manifests' dead-letter sink (Knative's event_display) as its subscriber: a fanout that delivers
 * the probe was built from a channel spec holding every subscription added before it.
 *
 * The probe Trigger stays (it passes only the probe's type, so it costs nothing): deleted, its
 * Subscription lingers in the channel's fanout for a moment, the broker filter answers "no such
 * Trigger" for it, and the channel sends every event of that moment to the Broker's dead-letter
 * sink, without the knativeerror* extensions (seen in chain/errors [knative]: a Provisioning's add
 * event dead-lettered 25 ms after it was made, while its Trigger delivered it as well).
 */
import { CoreV1Api, KubernetesObjectApi, type KubeConfig } from '@kubernetes/client-node';
import { isStatus } from '../control-plane/apply.js';
import { waitFor } from '../control-plane/wait.js';

/** The probe's CloudEvent type; readers of the dead-letter sink's log skip it. */
export const deliveryProbeType = 'dev.bpa.delivery-probe';

const probeTrigger = 'bpa-delivery-probe';

export interface DeliveryProbeOptions {
  kubeConfig: KubeConfig;
  /** The Broker's namespace (the functions' namespace). */
  namespace: string;
  broker: string;
  /** The MT broker's ingress as this machine reaches it (`http://host:port`). */
  ingressBase: string;
  /** The dead-letter sink's Service and the container whose log shows what it received. */
  sink: { service: string; podSelector: string; container: string };
  timeoutMs: number;
}

/** Resolves with the milliseconds from the probe Trigger's creation to the first probe seen. */
export async function proveBrokerDelivery(options: DeliveryProbeOptions): Promise<number> {
  const { kubeConfig, namespace, broker, ingressBase, sink, timeoutMs } = options;
  const started = Date.now();
  const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const trigger = {
    apiVersion: 'eventing.knative.dev/v1',
    kind: 'Trigger',
    metadata: { name: probeTrigger, namespace },
    spec: {
      broker,
      filter: { attributes: { type: deliveryProbeType } },
      subscriber: { ref: { apiVersion: 'v1', kind: 'Service', name: sink.service } },
    },
  };
  await objects.create(trigger).catch((error: unknown) => {
    if (!isStatus(error, 409)) throw error;
  });
  const idPrefix = `${probeTrigger}-${started}-`;
  let sent = 0;
  await waitFor(
    async () => {
      const pods = await core.listNamespacedPod({ namespace, labelSelector: sink.podSelector });
      const pod = pods.items.find((p) => p.status?.phase === 'Running');
      const log = pod?.metadata?.name
        ? await core.readNamespacedPodLog({ namespace, name: pod.metadata.name, container: sink.container })
        : '';
      if (log.includes(`id: ${idPrefix}`)) return true;
      sent += 1;
      const answer = await fetch(`${ingressBase}/${namespace}/${broker}`, {
        method: 'POST',
        headers: {
          'ce-specversion': '1.0',
          'ce-type': deliveryProbeType,
          'ce-source': 'bpa/delivery-probe',
          'ce-id': `${idPrefix}${sent}`,
          'content-type': 'application/json',
        },
        body: '{}',
      }).then(
        (response) => String(response.status),
        (error: unknown) => String(error),
      );
      throw new Error(
        `${sent} probes posted, none in the sink's log yet; the ingress last answered ${answer}`,
      );
    },
    {
      what: `a probe event through Broker ${namespace}/${broker} to the dead-letter sink`,
      timeoutMs,
      intervalMs: 1000,
    },
  );
  return Date.now() - started;
}

import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { BpaError } from '../../shared/errors.js';
import { buildKnativeImages } from '../images/main.js';
import { ensureKnativeBinaries, type KnativeSet } from './binaries.js';
import {
  installKnativeEventing,
  knativeNamespace,
  type KnativeInstall,
  type KnativeInstallOptions,
} from './install.js';
import { installServingWebhook, type ServingWebhookInstall } from './serving-webhook.js';

/** What a real node (local/kubelet-node's KubeletNode) must offer: importing an OCI archive. */
export interface ImageImporter {
  importImage(tarPath: string): Promise<string>;
}

export interface RealNodeKnativeOptions extends Omit<KnativeInstallOptions, 'images'> {
  /** The node the components run on: Knative's images are imported into it first. */
  node: ImageImporter;
}

/** Knative's images on a node: `ko://<import path>` -> `localhost/bpa-functions/knative-…@<digest>`. */
async function importKnativeImages(
  set: KnativeSet,
  node: ImageImporter,
  log: (line: string) => void,
): Promise<Record<string, string>> {
  await ensureKnativeBinaries(set, { onProgress: log });
  const built = buildKnativeImages({ log });
  const prefix = set === 'knative' ? 'knative-eventing-' : 'knative-serving-';
  for (const image of built.images.filter((i) => i.name.startsWith(prefix)))
    await node.importImage(image.archive);
  return Object.fromEntries(
    Object.entries(built.koImages).filter(([ko]) =>
      ko.startsWith(set === 'knative' ? 'ko://knative.dev/eventing/' : 'ko://knative.dev/serving/'),
    ),
  );
}

/**
 * Knative Eventing on a real node (local/kubelet-node): its binaries (engines/build.sh knative,
 * built when missing) made into images (local/images/knative.ts, cached by content), imported
 * into the node, then its config/ installed with each `ko://` reference resolved to those images
 * by digest (`imagePullPolicy: Never`), the Deployments as Knative ships them (securityContext,
 * probes, limits). Resolves as installKnativeEventing does, plus the image map (for the
 * dead-letter sink's event_display, `ko://knative.dev/eventing/cmd/event_display`).
 */
export async function installKnativeOnRealNode(
  options: RealNodeKnativeOptions,
): Promise<KnativeInstall & { images: Record<string, string> }> {
  const log = options.log ?? (() => undefined);
  const { node, ...rest } = options;
  const images = await importKnativeImages('knative', node, log);
  const install = await installKnativeEventing({ ...rest, images });
  return { ...install, images };
}

/** Knative Serving's admission webhook on a real node, from its image (as installKnativeOnRealNode). */
export async function installServingWebhookOnRealNode(options: {
  kubeConfig: KubeConfig;
  node: ImageImporter;
  log?: (line: string) => void;
  timeoutMs?: number;
}): Promise<ServingWebhookInstall> {
  const { node, ...rest } = options;
  const images = await importKnativeImages('knative-serving', node, options.log ?? (() => undefined));
  return installServingWebhook({ ...rest, images });
}

/**
 * The MT broker's ingress as this machine reaches it on a real node: a Ready ingress pod's
 * address on 8080 (the machine routes the node's pod subnet; a ClusterIP is kube-proxy's, inside
 * the node's network namespace, and from here would take the machine's default route).
 */
export async function brokerIngressAddress(kubeConfig: KubeConfig): Promise<string> {
  const pods = await kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({
    namespace: knativeNamespace,
    labelSelector: 'eventing.knative.dev/brokerRole=ingress',
  });
  const ready = pods.items.find((p) =>
    p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  if (!ready?.status?.podIP)
    throw new BpaError(
      'KnativeInstallFailed',
      'no Ready mt-broker-ingress pod in knative-eventing',
      'internal',
    );
  return `http://${ready.status.podIP}:8080`;
}

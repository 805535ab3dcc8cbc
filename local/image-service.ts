import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { startImageService, type RunningImageService } from '../functions/image-upload/index.js';
import { definition as imageVerify } from '../functions/image-verify/index.js';
import { createLogger, type Logger } from '../shared/log.js';
import { startFunctionServer, type RunningFunctionServer } from '../shared/server/function-server.js';
import { startBroker, type RunningBroker } from './broker/index.js';
import { readYamlObjects } from './control-plane/apply.js';
import { freeLoopbackPort } from './control-plane/free-port.js';
import { repoRoot } from './control-plane/repo-root.js';
import { startObjectStore, type RunningObjectStore } from './object-store/versitygw.js';

export interface LocalImageService {
  /** tus endpoint (POST creates an upload). */
  uploadUrl: string;
  /** The BPA REST agent's routes: `<legacyUrl>/{owner}/{cluster}/{type}_images[/{name}]`. */
  legacyUrl: string;
  /** Downloads of Ready images: `<downloadUrl>/<namespace>/<Image name>`. */
  downloadUrl: string;
  /** The S3 server (versitygw) and its bucket. */
  store: RunningObjectStore;
  stop(): Promise<void>;
}

export interface LocalImageServiceOptions {
  kubeConfig: KubeConfig;
  /** Where image.uploaded/verified/failed go besides image-verify (e.g. the stack's Broker ingress). */
  forwardTo?: string;
  host?: string;
  port?: number;
  log?: Logger;
}

const namespace = 'bpa-system';

/**
 * The image service on one machine, as `bpa dev --images` runs it: a real S3 server
 * (versitygw), image-upload serving uploads and downloads, image-verify behind the component's own
 * Trigger (manifests/components/image-service/triggers-image-verify.yaml) on a Broker of its own,
 * and every image event forwarded to `forwardTo`.
 */
export async function startLocalImageService(options: LocalImageServiceOptions): Promise<LocalImageService> {
  const host = options.host ?? '127.0.0.1';
  const log = options.log ?? createLogger();
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const close of stops.splice(0).reverse()) await close().catch(() => undefined);
  };
  try {
    const store = await startObjectStore();
    stops.push(() => store.close());
    const port = options.port ?? (await freeLoopbackPort());
    const serviceUrl = `http://${host}:${port}`;
    const verify: RunningFunctionServer = await startFunctionServer({
      definition: imageVerify,
      host,
      port: 0,
      kubeConfig: options.kubeConfig,
      env: { ...store.env(), IMAGE_DOWNLOAD_BASE_URL: serviceUrl },
      log,
      tracing: false,
    });
    stops.push(() => verify.close());
    // Dead letters are the cluster's (the stack's dead-letter function): this Broker retries only.
    const triggers = readYamlObjects(
      join(repoRoot(), 'manifests', 'components', 'image-service', 'triggers-image-verify.yaml'),
    ).map((trigger) => {
      const spec = (trigger as { spec: { delivery?: Record<string, unknown> } }).spec;
      const { deadLetterSink: _unused, ...delivery } = spec.delivery ?? {};
      return { ...trigger, metadata: { ...trigger.metadata, namespace }, spec: { ...spec, delivery } };
    });
    const forward = options.forwardTo
      ? [
          {
            apiVersion: 'eventing.knative.dev/v1',
            kind: 'Trigger',
            metadata: { name: 'image-events-forward', namespace },
            spec: { broker: 'default', subscriber: { uri: options.forwardTo } },
          },
        ]
      : [];
    const broker: RunningBroker = await startBroker({
      host,
      objects: [
        { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', metadata: { name: 'default', namespace } },
        ...triggers,
        ...forward,
      ],
      resolveRef: (ref) => {
        if (ref.name === imageVerify.name) return verify.url;
        throw new Error(`no local address for ${ref.kind} ${ref.name}`);
      },
      defaultNamespace: namespace,
      log,
    });
    stops.push(() => broker.close());
    const service: RunningImageService = await startImageService({
      kubeConfig: options.kubeConfig,
      env: {
        ...store.env(),
        HOST: host,
        PORT: String(port),
        BROKER_URL: broker.ingressUrl(namespace, 'default'),
      },
      log,
    });
    stops.push(() => service.close());
    return {
      uploadUrl: `${service.url}/files`,
      legacyUrl: `${service.url}/v1/baremetalcluster`,
      downloadUrl: `${service.url}/images`,
      store,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

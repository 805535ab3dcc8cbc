/**
 * The image service with real peers, for the tenancy tests (tenancy.test.ts and
 * test/resilience/hostile-tenant-images.test.ts): versitygw (the real S3 server), the run's real
 * API server, the embedded broker with image-verify behind its Trigger. Nothing is imitated.
 */
import { Socket } from 'node:net';
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { startImageService, type RunningImageService } from '../../../../functions/image-upload/index.js';
import { definition as imageVerify } from '../../../../functions/image-verify/index.js';
import { startBroker, type RunningBroker } from '../../../../local/broker/index.js';
import { freeLoopbackPort } from '../../../../local/control-plane/free-port.js';
import { waitFor } from '../../../../local/control-plane/wait.js';
import { startObjectStore, type RunningObjectStore } from '../../../../local/object-store/versitygw.js';
import { EventTypes } from '../../../../shared/events/types.js';
import { kubeClients } from '../../../../shared/k8s/clients.js';
import { readImage, type StoredImage } from '../../../../shared/k8s/image.js';
import { createLogger, silentLogger } from '../../../../shared/log.js';
import {
  startFunctionServer,
  type RunningFunctionServer,
} from '../../../../shared/server/function-server.js';
import { serviceAccountToken } from '../../../support/service-account-kubeconfig.js';
import { brokerObject, triggerObject } from '../../../unit/broker/support/recording-subscriber.js';

export interface ImageWorld {
  store: RunningObjectStore;
  service: RunningImageService;
  verifier: RunningFunctionServer;
  broker: RunningBroker;
  close(): Promise<void>;
}

export async function startImageWorld(options: {
  kubeConfig: KubeConfig;
  /** Where the broker and its Trigger live. */
  namespace: string;
  serviceEnv?: Record<string, string>;
  verifyEnv?: Record<string, string>;
}): Promise<ImageWorld> {
  const store = await startObjectStore();
  const port = await freeLoopbackPort();
  const verifier = await startFunctionServer({
    definition: imageVerify,
    host: '127.0.0.1',
    port: 0,
    kubeConfig: options.kubeConfig,
    env: { ...store.env(), IMAGE_DOWNLOAD_BASE_URL: `http://127.0.0.1:${port}`, ...options.verifyEnv },
    log: silentLogger,
    tracing: false,
  });
  const ns = options.namespace;
  const broker = await startBroker({
    objects: [
      brokerObject('default', undefined, ns),
      triggerObject(
        'image-verify',
        verifier.url,
        { filter: { attributes: { type: EventTypes.imageUploaded } } },
        'default',
        ns,
      ),
    ],
    resolveRef: () => {
      throw new Error('no refs');
    },
    defaultNamespace: ns,
    log: silentLogger,
  });
  const service = await startImageService({
    kubeConfig: options.kubeConfig,
    env: {
      ...store.env(),
      HOST: '127.0.0.1',
      PORT: String(port),
      BROKER_URL: broker.ingressUrl(ns, 'default'),
      ...options.serviceEnv,
    },
    log: process.env.BPA_DEBUG_IMAGES ? createLogger() : silentLogger,
  });
  return {
    store,
    service,
    verifier,
    broker,
    close: async () => {
      await service.close();
      await broker.close();
      await verifier.close();
      await store.close();
    },
  };
}

/** A ServiceAccount of `namespace` that may create, get, update and delete Images there; its token. */
export async function imageWriter(admin: KubeConfig, namespace: string, name = 'uploader'): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name },
      rules: [
        {
          apiGroups: ['bpa.akraino.org'],
          resources: ['images'],
          verbs: ['create', 'get', 'update', 'delete'],
        },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  });
  return serviceAccountToken(admin, namespace, name);
}

export const tusMetadata = (fields: Record<string, string>) =>
  Object.entries(fields)
    .map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`)
    .join(',');

/** A whole image by tus creation-with-upload (one POST); returns the response. */
export function tusPost(
  service: RunningImageService,
  token: string,
  metadata: Record<string, string>,
  body: Buffer | undefined,
  length = body?.length ?? 0,
): Promise<Response> {
  return fetch(`${service.url}/files`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'tus-resumable': '1.0.0',
      'upload-length': String(length),
      'upload-metadata': tusMetadata(metadata),
      ...(body ? { 'content-type': 'application/offset+octet-stream' } : {}),
    },
    ...(body ? { body } : {}),
  });
}

export function waitForImage(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  done: (image: StoredImage) => boolean,
  timeoutMs = 30_000,
): Promise<StoredImage> {
  return waitFor(
    async () => {
      const image = await readImage(kubeClients(kubeConfig), namespace, name);
      return image && done(image) ? image : undefined;
    },
    { what: `Image ${namespace}/${name}`, timeoutMs },
  );
}

/**
 * A slow client on loopback: opens a raw socket, sends `partial` (e.g. half a request line) and
 * nothing more; resolves with what the server sent before it closed the socket.
 */
export function slowClient(port: number, partial: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    socket.connect(port, '127.0.0.1', () => socket.write(partial));
  });
}

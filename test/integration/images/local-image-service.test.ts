/**
 * `bpa dev --images`' image service (local/image-service.ts) against the run's real API server:
 * real versitygw, image-verify behind the component's own Trigger, events forwarded on.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { Upload } from 'tus-js-client';
import { startLocalImageService, type LocalImageService } from '../../../local/image-service.js';
import { imageObjectName } from '../../../shared/core/image-names.js';
import { EventTypes } from '../../../shared/events/types.js';
import { kubeClients } from '../../../shared/k8s/clients.js';
import { readImage } from '../../../shared/k8s/image.js';
import { silentLogger } from '../../../shared/log.js';
import { useTestCluster } from '../../support/cluster.js';
import { serviceAccountToken } from '../../support/service-account-kubeconfig.js';
import {
  startSubscriber,
  waitFor,
  type RecordingSubscriber,
} from '../../unit/broker/support/recording-subscriber.js';

const cluster = useTestCluster({ namespacePrefix: 'local-images' });
let images: LocalImageService;
let forwarded: RecordingSubscriber;
let token: string;

beforeAll(async () => {
  forwarded = await startSubscriber();
  images = await startLocalImageService({
    kubeConfig: cluster.kubeConfig,
    forwardTo: forwarded.url,
    log: silentLogger,
  });
  const ns = cluster.namespace;
  await cluster.kubeConfig
    .makeApiClient(CoreV1Api)
    .createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'dev' } } });
  const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace: ns,
    body: {
      metadata: { name: 'image-writer' },
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
    namespace: ns,
    body: {
      metadata: { name: 'dev-edit' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'image-writer' },
      subjects: [{ kind: 'ServiceAccount', name: 'dev', namespace: ns }],
    },
  });
  token = await serviceAccountToken(cluster.kubeConfig, ns, 'dev');
}, 60_000);

afterAll(async () => {
  await images?.stop();
  await forwarded?.close();
});

it('uploads with tus, verifies, serves the image and forwards the image events', async () => {
  const data = randomBytes(1024 * 1024 + 7);
  await new Promise<void>((resolve, reject) => {
    new Upload(data, {
      endpoint: images.uploadUrl,
      headers: { authorization: `Bearer ${token}` },
      metadata: {
        owner: cluster.namespace,
        cluster: 'edge',
        type: 'os',
        name: 'node.qcow2',
        format: 'qcow2',
      },
      onError: reject,
      onSuccess: () => resolve(),
    }).start();
  });
  const name = imageObjectName('edge', 'os', 'node.qcow2');
  const sha256 = createHash('sha256').update(data).digest('hex');
  await waitFor(
    () => forwarded.received.some((r) => r.event.type === EventTypes.imageVerified),
    20_000,
    'image.verified',
  );
  expect(forwarded.received.map((r) => r.event.type)).toEqual(
    expect.arrayContaining([EventTypes.imageUploaded, EventTypes.imageVerified]),
  );
  const image = await readImage(kubeClients(cluster.kubeConfig), cluster.namespace, name);
  expect(image?.status).toMatchObject({
    phase: 'Ready',
    sha256,
  });
  // Signed (shared/storage/signed-url.ts): the path, then the signature's query.
  expect(image!.status!.url!.startsWith(`${images.downloadUrl}/${cluster.namespace}/${name}?uid=`)).toBe(
    true,
  );
  expect(image?.spec.format).toBe('qcow2');
  const download = await fetch(image!.status!.url!);
  expect(
    createHash('sha256')
      .update(Buffer.from(await download.arrayBuffer()))
      .digest('hex'),
  ).toBe(sha256);
});

/**
 * The image service against real peers: a real S3 server (versitygw, built from the Go module
 * proxy), the real API server of the run (TokenReview, SubjectAccessReview, the Image CRD), the
 * real tus client (tus-js-client), the embedded broker and image-verify behind a Trigger.
 */
import { createHash, randomBytes } from 'node:crypto';
import { HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Upload, type UploadOptions } from 'tus-js-client';
import { startImageService, type RunningImageService } from '../../../functions/image-upload/index.js';
import { definition as imageVerify } from '../../../functions/image-verify/index.js';
import { startBroker, type RunningBroker } from '../../../local/broker/index.js';
import { freeLoopbackPort } from '../../../local/control-plane/free-port.js';
import { createNamespace, deleteNamespace } from '../../../local/control-plane/namespaces.js';
import { startObjectStore, type RunningObjectStore } from '../../../local/object-store/versitygw.js';
import { imageObjectName } from '../../../shared/core/image-names.js';
import { EventTypes } from '../../../shared/events/types.js';
import { readImage, type StoredImage } from '../../../shared/k8s/image.js';
import { waitFor as waitUntil } from '../../../local/control-plane/wait.js';
import { kubeClients } from '../../../shared/k8s/clients.js';
import { silentLogger } from '../../../shared/log.js';
import { startFunctionServer, type RunningFunctionServer } from '../../../shared/server/function-server.js';
import { useTestCluster } from '../../support/cluster.js';
import { serviceAccountToken } from '../../support/service-account-kubeconfig.js';
import {
  brokerObject,
  startSubscriber,
  triggerObject,
  waitFor,
  type ReceivedRequest,
  type RecordingSubscriber,
} from '../../unit/broker/support/recording-subscriber.js';

const cluster = useTestCluster({ namespacePrefix: 'images' });
const MiB = 1024 * 1024;
const maxBytes = 48 * MiB;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

let store: RunningObjectStore;
let s3: S3Client;
let recorder: RecordingSubscriber;
let verifier: RunningFunctionServer;
let broker: RunningBroker;
let service: RunningImageService;
let servicePort: number;
let writerToken: string;
let viewerToken: string;

async function grant(
  kubeConfig: KubeConfig,
  namespace: string,
  role: string,
  verbs: string[],
  subjectNs: string,
  sa: string,
) {
  const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: role },
      rules: [{ apiGroups: ['bpa.akraino.org'], resources: ['images'], verbs }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: subjectNs }],
    },
  });
}

const startService = () =>
  startImageService({
    kubeConfig: cluster.kubeConfig,
    env: {
      ...store.env(),
      HOST: '127.0.0.1',
      PORT: String(servicePort),
      BROKER_URL: broker.ingressUrl(cluster.namespace, 'default'),
      IMAGE_MAX_BYTES: String(maxBytes),
      AUTH_CACHE_SECONDS: '0',
    },
    log: silentLogger,
  });

beforeAll(async () => {
  store = await startObjectStore();
  s3 = new S3Client({
    endpoint: store.endpoint,
    region: store.region,
    forcePathStyle: true,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
  });
  servicePort = await freeLoopbackPort();
  recorder = await startSubscriber();
  verifier = await startFunctionServer({
    definition: imageVerify,
    host: '127.0.0.1',
    port: 0,
    kubeConfig: cluster.kubeConfig,
    env: { ...store.env(), IMAGE_DOWNLOAD_BASE_URL: `http://127.0.0.1:${servicePort}` },
    log: silentLogger,
    tracing: false,
  });
  const ns = cluster.namespace;
  broker = await startBroker({
    objects: [
      brokerObject('default', undefined, ns),
      triggerObject(
        'image-verify',
        verifier.url,
        { filter: { attributes: { type: EventTypes.imageUploaded } } },
        'default',
        ns,
      ),
      triggerObject('everything', recorder.url, {}, 'default', ns),
    ],
    resolveRef: () => {
      throw new Error('no refs');
    },
    defaultNamespace: ns,
    log: silentLogger,
  });
  service = await startService();
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  for (const name of ['uploader', 'viewer'])
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
  await grant(cluster.kubeConfig, ns, 'image-writer', ['create', 'get', 'update', 'delete'], ns, 'uploader');
  await grant(cluster.kubeConfig, ns, 'image-viewer', ['get'], ns, 'viewer');
  writerToken = await serviceAccountToken(cluster.kubeConfig, ns, 'uploader');
  viewerToken = await serviceAccountToken(cluster.kubeConfig, ns, 'viewer');
}, 120_000);

afterAll(async () => {
  await service?.close();
  await broker?.close();
  await verifier?.close();
  await recorder?.close();
  s3?.destroy();
  await store?.close();
});

const auth = (token = writerToken) => ({ authorization: `Bearer ${token}` });

async function objectKeys(prefix: string): Promise<string[]> {
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: store.bucket, Prefix: prefix }));
  return (listed.Contents ?? []).map((o) => o.Key!).sort();
}

async function waitForImage(
  name: string,
  done: (image: StoredImage) => boolean,
  namespace = cluster.namespace,
  timeoutMs = 30_000,
): Promise<StoredImage> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const image = await readImage(kubeClients(cluster.kubeConfig), namespace, name);
    if (image && done(image)) return image;
    if (Date.now() > deadline)
      throw new Error(`Image ${name} did not get there: ${JSON.stringify(image?.status)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function tusUpload(data: Buffer, options: UploadOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const upload = new Upload(data, {
      endpoint: `${service.url}/files`,
      headers: auth(),
      retryDelays: [100, 300, 600, 1000, 2000],
      ...options,
      onError: reject,
      onSuccess: () => resolve(upload.url!),
    });
    upload.start();
  });
}

const metadataFor = (name: string, extra: Record<string, string> = {}) => ({
  owner: cluster.namespace,
  cluster: 'beta',
  type: 'os',
  name,
  ...extra,
});

describe('tus uploads', () => {
  it('resumes a 20 MiB upload broken at an odd offset by a restart of the service, and verifies it', async () => {
    const data = randomBytes(20 * MiB);
    const firstChunk = 7 * MiB + 1;
    let url: string | undefined;
    // Part one: the first PATCH ends at an odd offset, then the client stops (a broken transfer).
    await new Promise<void>((resolve, reject) => {
      const upload = new Upload(data, {
        endpoint: `${service.url}/files`,
        headers: auth(),
        chunkSize: firstChunk,
        metadata: metadataFor('resumed.img', { format: 'raw' }),
        retryDelays: null as unknown as number[],
        onChunkComplete: () => {
          url = upload.url ?? undefined;
          void upload.abort().then(resolve, reject);
        },
        onError: reject,
      });
      upload.start();
    });
    expect(url).toBeDefined();
    const head = await fetch(url!, { method: 'HEAD', headers: { ...auth(), 'tus-resumable': '1.0.0' } });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('upload-offset'))).toBe(firstChunk);
    expect(firstChunk % 2).toBe(1);
    expect(head.headers.get('upload-length')).toBe(String(data.length));
    // The Image shows where the upload stands: the stored offset, written after the PATCH ended.
    const progress = await waitUntil(
      async () => {
        const image = await readImage(
          kubeClients(cluster.kubeConfig),
          cluster.namespace,
          imageObjectName('beta', 'os', 'resumed.img'),
        );
        return image?.status?.uploadOffset === firstChunk ? image : undefined;
      },
      { what: "status.uploadOffset at the broken upload's offset", timeoutMs: 15_000 },
    );
    expect(progress.status).toMatchObject({
      phase: 'Uploading',
      uploadOffset: firstChunk,
      uploadLength: data.length,
    });

    // Part two: a new service process state (new store, new locks), and the client resumes from
    // the server's offset; the restart happens while a PATCH is in flight.
    await service.close();
    service = await startService();
    let restarted = false;
    let retries = 0;
    await tusUpload(data, {
      uploadUrl: url!,
      chunkSize: 6 * MiB,
      onChunkComplete: (_size, uploaded) => {
        if (!restarted && uploaded > 12 * MiB) {
          restarted = true;
          void service.close().then(async () => {
            service = await startService();
          });
        }
      },
      onShouldRetry: () => {
        retries += 1;
        return true;
      },
    });
    expect(restarted).toBe(true);
    expect(retries).toBeGreaterThan(0);

    const name = imageObjectName('beta', 'os', 'resumed.img');
    expect(name).toMatch(/^beta\.os\.resumed-img-[0-9a-f]{8}$/);
    const ready = await waitForImage(
      name,
      (i) => i.status?.phase === 'Ready' || i.status?.phase === 'Failed',
    );
    expect(ready.status).toMatchObject({
      phase: 'Ready',
      sha256: sha256(data),
      sha512: createHash('sha512').update(data).digest('hex'),
      uploadOffset: data.length,
      storage: { bucket: store.bucket, key: `operatingsystem/${cluster.namespace}/beta/resumed.img` },
      // Signed and expiring (shared/storage/signed-url.ts): the path, then the signature's query.
      url: expect.stringMatching(
        new RegExp(
          `^http://127\\.0\\.0\\.1:${servicePort}/images/${cluster.namespace}/${name}\\?uid=[^&]+&expires=\\d+&kid=local&signature=[\\w-]+$`,
        ),
      ),
      urlExpiresAt: expect.any(String),
      verification: { bytesVerified: data.length, totalBytes: data.length },
    });
    const object = await s3.send(
      new HeadObjectCommand({ Bucket: store.bucket, Key: ready.status!.storage!.key }),
    );
    expect(object.ContentLength).toBe(data.length);
    expect(await objectKeys(`operatingsystem/${cluster.namespace}/beta/resumed.img`)).toEqual([
      `operatingsystem/${cluster.namespace}/beta/resumed.img`,
      `operatingsystem/${cluster.namespace}/beta/resumed.img.info`,
      `operatingsystem/${cluster.namespace}/beta/resumed.img.sha256sum`,
    ]);

    // The chain's events, on the broker: uploaded (from the service), verified (image-verify's reply).
    await recorder.waitForCount(2);
    const types = recorder.received.map((r) => r.event.type);
    expect(types).toEqual(expect.arrayContaining([EventTypes.imageUploaded, EventTypes.imageVerified]));
    const verified = recorder.received.find((r) => r.event.type === EventTypes.imageVerified)!.event;
    expect(verified.data).toMatchObject({
      sha256: sha256(data),
      image: { name, namespace: cluster.namespace },
    });
    expect(verified.subject).toBe(`namespaces/${cluster.namespace}/images/${name}`);

    // Downloads as Ironic makes them: HEAD, then GET; Range for resumption; the checksum URL.
    const download = ready.status!.url!;
    const probe = await fetch(download, { method: 'HEAD' });
    expect(probe.status).toBe(200);
    expect(probe.headers.get('content-length')).toBe(String(data.length));
    expect(probe.headers.get('accept-ranges')).toBe('bytes');
    expect(new Date(probe.headers.get('last-modified')!).getTime()).toBeGreaterThan(Date.now() - 600_000);
    const etag = probe.headers.get('etag')!;
    expect(etag).toMatch(/^"[^"]+"$/);
    const whole = await fetch(download);
    expect(whole.status).toBe(200);
    expect(sha256(Buffer.from(await whole.arrayBuffer()))).toBe(sha256(data));
    const part = await fetch(download, { headers: { range: 'bytes=1000-1999' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 1000-1999/${data.length}`);
    expect(Buffer.from(await part.arrayBuffer())).toEqual(data.subarray(1000, 2000));
    const tail = await fetch(download, { headers: { range: 'bytes=-10' } });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer())).toEqual(data.subarray(data.length - 10));
    const stale = await fetch(download, { headers: { range: 'bytes=0-9', 'if-range': '"other"' } });
    expect(stale.status).toBe(200);
    await stale.body?.cancel();
    expect((await fetch(download, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect((await fetch(download, { headers: { range: `bytes=${data.length}-` } })).status).toBe(416);
    const checksum = await fetch(ready.status!.checksumUrl!);
    expect(await checksum.text()).toBe(`${sha256(data)}  resumed.img\n`);
  }, 120_000);

  it('answers 409 to a PATCH at the wrong offset and keeps the bytes', async () => {
    const create = await fetch(`${service.url}/files`, {
      method: 'POST',
      headers: {
        ...auth(),
        'tus-resumable': '1.0.0',
        'upload-length': '100',
        'upload-metadata': Object.entries(metadataFor('offsets'))
          .map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`)
          .join(','),
      },
    });
    expect(create.status).toBe(201);
    // Expiration extension: an unfinished upload says when it expires.
    expect(new Date(create.headers.get('upload-expires')!).getTime()).toBeGreaterThan(Date.now());
    const url = new URL(create.headers.get('location')!, service.url).toString();
    const patch = (offset: number, body: Buffer) =>
      fetch(url, {
        method: 'PATCH',
        headers: {
          ...auth(),
          'tus-resumable': '1.0.0',
          'content-type': 'application/offset+octet-stream',
          'upload-offset': String(offset),
        },
        body,
      });
    const first = await patch(0, Buffer.alloc(40, 1));
    expect(first.status).toBe(204);
    expect(first.headers.get('upload-expires')).toBeTruthy();
    const wrong = await patch(10, Buffer.alloc(60, 2));
    expect(wrong.status).toBe(409);
    const head = await fetch(url, { method: 'HEAD', headers: { ...auth(), 'tus-resumable': '1.0.0' } });
    expect(head.headers.get('upload-offset')).toBe('40');
    const done = await patch(40, Buffer.alloc(60, 2));
    expect(done.status).toBe(204);
    expect(done.headers.get('upload-offset')).toBe('100');
  });

  it('removes every object of a finished upload on DELETE (termination), and its Image', async () => {
    const data = randomBytes(3 * MiB + 3);
    const url = await tusUpload(data, { metadata: metadataFor('finished') });
    const key = `operatingsystem/${cluster.namespace}/beta/finished`;
    await waitForImage('beta.os.finished', (i) => i.status?.phase === 'Ready');
    expect(await objectKeys(key)).toEqual([key, `${key}.info`, `${key}.sha256sum`]);
    const terminated = await fetch(url, {
      method: 'DELETE',
      headers: { ...auth(), 'tus-resumable': '1.0.0' },
    });
    expect(terminated.status).toBe(204);
    expect(await objectKeys(key)).toEqual([]);
    expect(
      await readImage(kubeClients(cluster.kubeConfig), cluster.namespace, 'beta.os.finished'),
    ).toBeUndefined();
    const again = await fetch(url, { method: 'DELETE', headers: { ...auth(), 'tus-resumable': '1.0.0' } });
    expect(again.status).toBe(404);
  });

  it('fails an image whose bytes do not match the expected checksum, and never serves it', async () => {
    const data = randomBytes(MiB);
    await tusUpload(data, {
      metadata: metadataFor('tampered', { sha256: sha256(Buffer.from('something else')) }),
    });
    const failed = await waitForImage(
      'beta.os.tampered',
      (i) => i.status?.phase === 'Failed' || i.status?.phase === 'Ready',
    );
    expect(failed.status?.phase).toBe('Failed');
    expect(failed.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', status: 'False', reason: 'ChecksumMismatch' }),
    );
    expect(failed.status?.url).toBeUndefined();
    const isFailure = (r: ReceivedRequest) => r.event.type === EventTypes.imageFailed;
    await waitFor(() => recorder.received.some(isFailure), 20_000, 'image.failed on the broker');
    expect(recorder.received.find(isFailure)?.event.data).toMatchObject({
      reason: 'ChecksumMismatch',
      image: { name: 'beta.os.tampered' },
    });
    // No URL was signed for it; an unsigned one is refused before the Image is even read.
    const download = await fetch(`${service.url}/images/${cluster.namespace}/beta.os.tampered`);
    expect(download.status).toBe(403);
    expect(await download.json()).toMatchObject({ error: { reason: 'SignatureRequired' } });
    expect(await objectKeys(`operatingsystem/${cluster.namespace}/beta/tampered.sha256sum`)).toEqual([]);
  });
});

describe('the original REST agent routes', () => {
  // The original e2e's owner: a namespace of that name, where the uploader may write images.
  const owner = 'alpha';
  const base = (who = owner) => `${service.url}/v1/baremetalcluster/${who}/beta/container_images`;
  beforeAll(async () => {
    await createNamespace(cluster.kubeConfig, owner);
    await grant(
      cluster.kubeConfig,
      owner,
      'image-writer',
      ['create', 'get', 'update', 'delete'],
      cluster.namespace,
      'uploader',
    );
  });
  afterAll(async () => {
    await deleteNamespace(cluster.kubeConfig, owner);
  });

  it('passes the original e2e: POST qwerty123, GET, PATCH at offset 0 with the whole file, exact size, DELETE', async () => {
    const image = Buffer.from('This is a dummy file for testing.\n');
    const metadata = {
      owner,
      cluster_name: 'beta',
      type: 'container',
      image_name: 'qwerty123',
      image_length: image.length,
      image_offset: 0,
      upload_complete: false,
      description: { image_records: [{ image_record_name: 'iuysdi1234', repo: 'icn', tag: '2' }] },
    };
    const form = new FormData();
    form.append('metadata', new Blob([JSON.stringify(metadata)], { type: 'application/json' }));
    form.append('file', new Blob([JSON.stringify(metadata)]), 'sample.json');
    const post = await fetch(base(), { method: 'POST', headers: auth(), body: form });
    expect(post.status).toBe(201);
    expect(await post.json()).toMatchObject({
      image_name: 'qwerty123',
      image_length: image.length,
      image_offset: 0,
      upload_complete: false,
    });

    const get = await fetch(`${base()}/qwerty123`, { headers: auth() });
    expect(get.status).toBe(200);
    expect(await get.json()).toMatchObject({
      owner,
      cluster_name: 'beta',
      type: 'container',
      description: metadata.description,
    });

    const wrong = await fetch(`${base()}/qwerty123`, {
      method: 'PATCH',
      headers: { ...auth(), 'upload-offset': '5' },
      body: image,
    });
    expect(wrong.status).toBe(409);
    const short = await fetch(`${base()}/qwerty123`, {
      method: 'PATCH',
      headers: { ...auth(), 'upload-offset': '0' },
      body: image.subarray(1),
    });
    expect(short.status).toBe(400);
    const patch = await fetch(`${base()}/qwerty123`, {
      method: 'PATCH',
      headers: { ...auth(), 'upload-offset': '0' },
      body: image,
    });
    expect(patch.status).toBe(204);
    expect(patch.headers.get('upload-offset')).toBe(String(image.length));
    const key = `container/${owner}/beta/qwerty123`;
    const object = await s3.send(new HeadObjectCommand({ Bucket: store.bucket, Key: key }));
    expect(object.ContentLength).toBe(image.length);
    const after = (await (await fetch(`${base()}/qwerty123`, { headers: auth() })).json()) as {
      upload_complete: boolean;
    };
    expect(after.upload_complete).toBe(true);

    const put = await fetch(`${base()}/qwerty123`, {
      method: 'PUT',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ ...metadata, description: { image_records: [] } }),
    });
    expect(put.status).toBe(200);

    await waitForImage('beta.container.qwerty123', (i) => i.status?.phase === 'Ready', owner);
    const del = await fetch(`${base()}/qwerty123`, { method: 'DELETE', headers: auth() });
    expect(del.status).toBe(204);
    expect(await objectKeys(key)).toEqual([]);
    expect((await fetch(`${base()}/qwerty123`, { headers: auth() })).status).toBe(404);
    expect((await fetch(`${base()}/qwerty123`, { method: 'DELETE', headers: auth() })).status).toBe(404);
  });

  it('answers 404 for an image that does not exist, and 400 when the metadata contradicts the path', async () => {
    expect((await fetch(`${base(cluster.namespace)}/nothing-here`, { headers: auth() })).status).toBe(404);
    const form = new FormData();
    form.append('metadata', JSON.stringify({ owner: 'someone-else', image_name: 'x', image_length: 3 }));
    expect(
      (await fetch(base(cluster.namespace), { method: 'POST', headers: auth(), body: form })).status,
    ).toBe(400);
  });
});

describe('access and limits', () => {
  const tusCreate = (headers: Record<string, string>, length = 10) =>
    fetch(`${service.url}/files`, {
      method: 'POST',
      headers: {
        'tus-resumable': '1.0.0',
        'upload-length': String(length),
        'upload-metadata': Object.entries(metadataFor('guarded'))
          .map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`)
          .join(','),
        ...headers,
      },
    });

  it('answers 401 without a token or with a token the API server does not know', async () => {
    expect((await tusCreate({})).status).toBe(401);
    expect((await tusCreate({ authorization: 'Bearer not-a-token' })).status).toBe(401);
    expect(
      (await fetch(`${service.url}/v1/baremetalcluster/${cluster.namespace}/beta/os_images/x`)).status,
    ).toBe(401);
  });

  it('answers 403 when the identity may not create images in the namespace', async () => {
    const response = await tusCreate(auth(viewerToken));
    expect(response.status).toBe(403);
    expect(await response.text()).toContain(
      `system:serviceaccount:${cluster.namespace}:viewer may not create images`,
    );
    const elsewhere = await fetch(`${service.url}/v1/baremetalcluster/default/beta/os_images/x`, {
      headers: auth(),
    });
    expect(elsewhere.status).toBe(403);
    expect(await objectKeys(`operatingsystem/${cluster.namespace}/beta/guarded`)).toEqual([]);
  });

  it('answers 413 over the maximum before storing a byte', async () => {
    expect((await tusCreate(auth(), maxBytes + 1)).status).toBe(413);
    const form = new FormData();
    form.append('metadata', JSON.stringify({ image_name: 'huge', image_length: maxBytes + 1 }));
    const legacy = await fetch(`${service.url}/v1/baremetalcluster/${cluster.namespace}/beta/os_images`, {
      method: 'POST',
      headers: auth(),
      body: form,
    });
    expect(legacy.status).toBe(413);
    expect(await objectKeys(`operatingsystem/${cluster.namespace}/beta/`)).not.toContain(
      `operatingsystem/${cluster.namespace}/beta/huge`,
    );
    expect(await objectKeys(`operatingsystem/${cluster.namespace}/beta/guarded`)).toEqual([]);
    expect(
      await readImage(kubeClients(cluster.kubeConfig), cluster.namespace, 'beta.os.huge'),
    ).toBeUndefined();
  });

  it('serves /metrics on its serving port (what the PodMonitor scrapes): its requests by route, method and code', async () => {
    const response = await fetch(`${service.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await response.text();
    // The 413s of the test before, one by tus and one by the original's route.
    expect(text).toMatch(/^bpa_image_http_requests_total\{route="tus",method="POST",code="413"\} [1-9]/m);
    expect(text).toMatch(/^bpa_image_http_requests_total\{route="legacy",method="POST",code="413"\} [1-9]/m);
    expect(text).toMatch(
      /^bpa_image_http_request_duration_seconds_count\{route="tus",method="PATCH",code="204"\} [1-9]/m,
    );
    expect(text).toContain('process_resident_memory_bytes');
  });
});

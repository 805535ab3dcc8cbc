/**
 * Contract §12, the image service's part: signed and expiring download URLs, per-namespace
 * quotas, server timeouts against slow clients, the limit on failed token reviews, and
 * verification whose deadline and progress follow the image's size. Real peers only: versitygw,
 * the run's kube-apiserver (TokenReview, SubjectAccessReview, the Image CRD, watches), the
 * embedded broker with image-verify behind its Trigger (support/image-world.ts).
 */
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Watch } from '@kubernetes/client-node';
import {
  createNamespace,
  deleteNamespace,
  uniqueNamespaceName,
} from '../../../local/control-plane/namespaces.js';
import { hostImageFor } from '../../../shared/core/host-image.js';
import { encodeUploadId } from '../../../functions/image-upload/tus.js';
import { imageObjectName } from '../../../shared/core/image-names.js';
import { signDownloadUrl, urlKeysSchema } from '../../../shared/storage/signed-url.js';
import { useTestCluster } from '../../support/cluster.js';
import {
  imageWriter,
  slowClient,
  startImageWorld,
  tusMetadata,
  tusPost,
  waitForImage,
  type ImageWorld,
} from './support/image-world.js';

const cluster = useTestCluster({ namespacePrefix: 'images-tenancy' });
const MiB = 1024 * 1024;
let world: ImageWorld;
let token: string;
/** A namespace with small quotas: 3 MiB of Images, one streaming upload. */
let small: string;
let smallToken: string;

beforeAll(async () => {
  small = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('images-quota'));
  world = await startImageWorld({
    kubeConfig: cluster.kubeConfig,
    namespace: cluster.namespace,
    serviceEnv: {
      IMAGE_NAMESPACE_QUOTAS: JSON.stringify({ [small]: { bytes: 3 * MiB, uploads: 1 } }),
      HTTP_HEADERS_TIMEOUT_SECONDS: '1',
      HTTP_IDLE_TIMEOUT_SECONDS: '2',
      AUTH_CACHE_SECONDS: '30',
      AUTH_FAILURES_PER_ADDRESS: '5',
      // The flood test speaks for other client addresses through X-Forwarded-For.
      TRUSTED_PROXY_HOPS: '1',
    },
    verifyEnv: {
      IMAGE_VERIFY_PROGRESS_BYTES: String(MiB),
      IMAGE_VERIFY_MIN_SECONDS: '1',
      IMAGE_VERIFY_MIN_BYTES_PER_SECOND: String(MiB),
    },
  });
  token = await imageWriter(cluster.kubeConfig, cluster.namespace);
  smallToken = await imageWriter(cluster.kubeConfig, small);
}, 120_000);

afterAll(async () => {
  await world?.close();
  if (small) await deleteNamespace(cluster.kubeConfig, small);
});

const meta = (owner: string, name: string) => ({ owner, cluster: 'beta', type: 'os', name });

describe('verification follows the size of the image', () => {
  it('writes progress (bytes verified of the total) while it reads, and a deadline derived from the size', async () => {
    const data = randomBytes(6 * MiB);
    const name = imageObjectName('beta', 'os', 'progress');
    const seen: number[] = [];
    const watch = await new Watch(cluster.kubeConfig).watch(
      `/apis/bpa.akraino.org/v1alpha1/namespaces/${cluster.namespace}/images`,
      { fieldSelector: `metadata.name=${name}` },
      (_type, object: { status?: { verification?: { bytesVerified: number } } }) => {
        const bytes = object.status?.verification?.bytesVerified;
        if (bytes !== undefined) seen.push(bytes);
      },
      () => undefined,
    );
    try {
      expect((await tusPost(world.service, token, meta(cluster.namespace, 'progress'), data)).status).toBe(
        201,
      );
      const ready = await waitForImage(cluster.kubeConfig, cluster.namespace, name, (i) =>
        ['Ready', 'Failed'].includes(i.status?.phase ?? ''),
      );
      expect(ready.status?.phase).toBe('Ready');
      const verification = ready.status!.verification!;
      expect(verification).toMatchObject({ bytesVerified: data.length, totalBytes: data.length });
      // 6 MiB at the configured minimum of 1 MiB/s: 6 s, not a fixed deadline.
      expect(Date.parse(verification.deadline!) - Date.parse(verification.startedAt!)).toBe(6000);
      expect(seen.some((bytes) => bytes > 0 && bytes < data.length)).toBe(true);
    } finally {
      watch.abort();
    }
  }, 60_000);
});

describe('signed download URLs', () => {
  let url: string;
  let checksumUrl: string;
  let data: Buffer;
  const name = imageObjectName('beta', 'os', 'signed');
  beforeAll(async () => {
    data = randomBytes(MiB + 7);
    expect((await tusPost(world.service, token, meta(cluster.namespace, 'signed'), data)).status).toBe(201);
    const ready = await waitForImage(
      cluster.kubeConfig,
      cluster.namespace,
      name,
      (i) => i.status?.phase === 'Ready',
    );
    url = ready.status!.url!;
    checksumUrl = ready.status!.checksumUrl!;
    // host-lookup writes what hostImageFor gives it: the signed URL.
    expect(hostImageFor(ready).url).toBe(url);
    expect(Date.parse(ready.status!.urlExpiresAt!)).toBeGreaterThan(Date.now());
  }, 60_000);

  it('serves the image and its checksum with no token at the signed URLs', async () => {
    expect((await fetch(url, { method: 'HEAD' })).status).toBe(200);
    const whole = await fetch(url);
    expect(Buffer.from(await whole.arrayBuffer())).toEqual(data);
    expect((await fetch(checksumUrl)).status).toBe(200);
  });

  it('answers 403 with the JSON error body to a missing, tampered, moved or expired signature', async () => {
    const signed = new URL(url);
    const bare = `${signed.origin}${signed.pathname}`;
    const tampered = new URL(url);
    const signature = tampered.searchParams.get('signature')!;
    tampered.searchParams.set('signature', `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`);
    const later = new URL(url);
    later.searchParams.set('expires', String(Number(later.searchParams.get('expires')) + 3600));
    // The image's signature on the checksum's path, and on another name.
    const checksumPath = new URL(url);
    checksumPath.pathname += '.sha256sum';
    const other = new URL(url);
    other.pathname = other.pathname.replace(name, imageObjectName('beta', 'os', 'progress'));
    const keys = urlKeysSchema.parse(world.store.env().IMAGE_URL_KEYS);
    const uid = signed.searchParams.get('uid')!;
    const expired = signDownloadUrl(
      signed.origin,
      { namespace: cluster.namespace, name, uid, kind: 'image' },
      new Date(Date.now() - 1000),
      keys,
    );
    const foreignKey = signDownloadUrl(
      signed.origin,
      { namespace: cluster.namespace, name, uid, kind: 'image' },
      new Date(Date.now() + 3600_000),
      [{ id: 'local', secret: randomBytes(32).toString('hex') }],
    );
    const cases = {
      SignatureRequired: [bare],
      InvalidSignature: [tampered, later, checksumPath, other, foreignKey].map(String),
      UrlExpired: [expired],
    };
    for (const [reason, urls] of Object.entries(cases))
      for (const target of urls)
        for (const method of ['GET', 'HEAD']) {
          const response = await fetch(target, { method });
          expect({ target, method, status: response.status }).toEqual({ target, method, status: 403 });
          if (method === 'GET')
            expect(await response.json()).toEqual({ error: { reason, message: expect.any(String) } });
        }
  });
});

describe('per-namespace quotas', () => {
  it('answers 413 naming the namespace, its use and its limit when the bytes would not fit', async () => {
    const first = await tusPost(world.service, smallToken, meta(small, 'fits'), randomBytes(2 * MiB));
    expect(first.status).toBe(201);
    const over = await tusPost(world.service, smallToken, meta(small, 'too-much'), undefined, 2 * MiB);
    expect(over.status).toBe(413);
    expect(over.headers.get('tus-resumable')).toBe('1.0.0');
    const text = await over.text();
    expect(text).toContain('ImageQuotaExceeded');
    expect(text).toContain(`Namespace ${small} stores ${2 * MiB} bytes`);
    expect(text).toContain(`its quota is ${3 * MiB} bytes`);
    // The original's POST goes through the same check.
    const form = new FormData();
    form.append('metadata', JSON.stringify({ image_name: 'legacy-too-much', image_length: 2 * MiB }));
    const legacy = await fetch(`${world.service.url}/v1/baremetalcluster/${small}/beta/os_images`, {
      method: 'POST',
      headers: { authorization: `Bearer ${smallToken}` },
      body: form,
    });
    expect(legacy.status).toBe(413);
    expect(await legacy.json()).toMatchObject({ error: { reason: 'ImageQuotaExceeded' } });
    // Nothing was created for the refused uploads.
    const { readImage } = await import('../../../shared/k8s/image.js');
    const { kubeClients } = await import('../../../shared/k8s/clients.js');
    expect(
      await readImage(kubeClients(cluster.kubeConfig), small, imageObjectName('beta', 'os', 'too-much')),
    ).toBeUndefined();
  }, 60_000);

  it('answers 429 with Retry-After to a second upload streaming at once in a namespace limited to one', async () => {
    interface Answer {
      status: number;
      retryAfter: string | undefined;
      body: string;
    }
    /** An upload of `name` whose body stays open after its first bytes: it holds the namespace's slot. */
    async function heldUpload(name: string) {
      const create = await tusPost(world.service, smallToken, meta(small, name), undefined, 1000);
      expect(create.status).toBe(201);
      const held = request(new URL(create.headers.get('location')!, world.service.url), {
        method: 'PATCH',
        headers: {
          authorization: `Bearer ${smallToken}`,
          'tus-resumable': '1.0.0',
          'upload-offset': '0',
          'content-type': 'application/offset+octet-stream',
          'content-length': '1000',
        },
      });
      const answer = new Promise<Answer>((resolve, reject) => {
        held.on('response', (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              retryAfter: response.headers['retry-after'],
              body,
            }),
          );
        });
        held.on('error', reject);
      });
      await new Promise<void>((resolve) => held.write(Buffer.alloc(10), () => resolve()));
      return { answer, finish: () => held.end(Buffer.alloc(990)) };
    }
    const first = await heldUpload('slow');
    const second = await tusPost(world.service, smallToken, meta(small, 'second'), Buffer.alloc(10));
    const secondAnswer: Answer = {
      status: second.status,
      retryAfter: second.headers.get('retry-after') ?? undefined,
      body: await second.text(),
    };
    first.finish();
    const answers = [await first.answer, secondAnswer];
    // Whichever reached the server second was refused (the first usually; the second when its
    // connection was quicker), with the namespace, its use and its limit; the other was stored.
    const refused = answers.filter((a) => a.status === 429);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.retryAfter).toBeTruthy();
    expect(refused[0]!.body).toContain(`Namespace ${small} has 1 uploads streaming; its limit is 1 at once`);
    expect(answers.map((a) => a.status).filter((status) => status !== 429)[0]).toBeLessThan(300);
  }, 60_000);
});

describe('slow clients', () => {
  it('closes a connection that sends half a request line (headers timeout)', async () => {
    const answer = await slowClient(world.service.port, 'GET /images/x/y HT');
    // Node answers 408 Request Timeout (or just closes): either way the socket is gone.
    expect(answer === '' || answer.startsWith('HTTP/1.1 408')).toBe(true);
  }, 30_000);

  it('closes an upload whose body stops moving (idle timeout)', async () => {
    const create = await tusPost(world.service, token, meta(cluster.namespace, 'stalled'), undefined, 1000);
    expect(create.status).toBe(201);
    const location = new URL(create.headers.get('location')!, world.service.url);
    const head =
      `PATCH ${location.pathname} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${token}\r\n` +
      `tus-resumable: 1.0.0\r\nupload-offset: 0\r\ncontent-type: application/offset+octet-stream\r\n` +
      `content-length: 1000\r\n\r\n${'x'.repeat(10)}`;
    await slowClient(world.service.port, head);
    // The socket closed on the server's side, with nothing more sent.
    const after = await fetch(location, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' },
    });
    expect(Number(after.headers.get('upload-offset'))).toBeLessThan(1000);
  }, 30_000);
});

describe('token reviews', () => {
  it('rate-limits failed reviews per client address and per token, with Retry-After', async () => {
    const before = world.service.tokenReviews();
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 30; i += 1) {
      const response = await fetch(`${world.service.url}/files`, {
        method: 'POST',
        headers: {
          authorization: `Bearer bad-token-${i}`,
          'x-forwarded-for': '192.0.2.66',
          'tus-resumable': '1.0.0',
          'upload-length': '10',
          'upload-metadata': tusMetadata(meta(cluster.namespace, 'flood')),
        },
      });
      statuses.push(response.status);
      if (response.status === 429) retryAfter = response.headers.get('retry-after');
    }
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(new Set(statuses.slice(5))).toEqual(new Set([429]));
    expect(Number(retryAfter)).toBeGreaterThan(0);
    expect(world.service.tokenReviews() - before).toBe(5);

    // One bad token from another address: reviewed once, then refused without a review.
    const again = () =>
      fetch(
        `${world.service.url}/files/${encodeUploadId(`operatingsystem/${cluster.namespace}/beta/flood`)}`,
        {
          method: 'HEAD',
          headers: {
            authorization: 'Bearer one-bad-token',
            'x-forwarded-for': '192.0.2.67',
            'tus-resumable': '1.0.0',
          },
        },
      );
    const reviewsBefore = world.service.tokenReviews();
    const statusesOfOne = [];
    for (let i = 0; i < 3; i += 1) statusesOfOne.push((await again()).status);
    expect(world.service.tokenReviews() - reviewsBefore).toBeLessThanOrEqual(1);
    expect(statusesOfOne.slice(1)).toEqual([429, 429]);
  }, 60_000);

  it('reviews a good token once for many requests (cached briefly)', async () => {
    const before = world.service.tokenReviews();
    for (let i = 0; i < 5; i += 1) {
      const response = await fetch(
        `${world.service.url}/v1/baremetalcluster/${cluster.namespace}/beta/os_images/none`,
        {
          headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '192.0.2.68' },
        },
      );
      expect(response.status).toBe(404);
    }
    expect(world.service.tokenReviews() - before).toBeLessThanOrEqual(1);
  });
});

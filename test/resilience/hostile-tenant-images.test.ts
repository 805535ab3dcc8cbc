/**
 * Hostile tenants against the image service (contract §12 "The image service serves each image
 * only to whom it belongs"; issue 23 items 7 and 9). The attacker is a tenant of its own
 * namespace (support/tenant.ts: a ServiceAccount with only that namespace's rights); the victim
 * is another namespace with a Ready image. Every attack is a tally line ('Attacks': gained
 * nothing or not). Real peers only: versitygw, the run's kube-apiserver, the embedded broker with
 * image-verify (test/integration/images/support/image-world.ts).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import {
  createNamespace,
  deleteNamespace,
  uniqueNamespaceName,
} from '../../local/control-plane/namespaces.js';
import { imageObjectName } from '../../shared/core/image-names.js';
import { useTestCluster } from '../support/cluster.js';
import {
  imageWriter,
  slowClient,
  startImageWorld,
  tusMetadata,
  tusPost,
  waitForImage,
  type ImageWorld,
} from '../integration/images/support/image-world.js';
import { FaultTally } from './report/tally.js';
import { createTenant, type Tenant } from './support/tenant.js';

const cluster = useTestCluster({ namespacePrefix: 'hostile-images' });
const tally = new FaultTally(import.meta.url);
const MiB = 1024 * 1024;
let world: ImageWorld;
let tenant: Tenant;
let tenantToken: string;
let victim: string;
let victimUrl: URL;
let ownUrl: URL;
let secret: Buffer;

beforeAll(async () => {
  victim = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('victim-images'));
  const attacker = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('tenant-images'));
  world = await startImageWorld({
    kubeConfig: cluster.kubeConfig,
    namespace: cluster.namespace,
    serviceEnv: {
      IMAGE_NAMESPACE_QUOTAS: JSON.stringify({ [attacker]: { bytes: 2 * MiB, uploads: 1 } }),
      AUTH_FAILURES_PER_ADDRESS: '5',
      HTTP_HEADERS_TIMEOUT_SECONDS: '1',
    },
  });
  tenant = await createTenant(cluster.kubeConfig, attacker);
  tenantToken = tenant.kubeConfig.getCurrentUser()!.token!;
  const victimToken = await imageWriter(cluster.kubeConfig, victim);
  secret = randomBytes(MiB);
  const meta = (owner: string, name: string) => ({ owner, cluster: 'beta', type: 'os', name });
  expect((await tusPost(world.service, victimToken, meta(victim, 'secret'), secret)).status).toBe(201);
  expect((await tusPost(world.service, tenantToken, meta(attacker, 'mine'), randomBytes(1000))).status).toBe(
    201,
  );
  const ready = (ns: string, name: string) =>
    waitForImage(
      cluster.kubeConfig,
      ns,
      imageObjectName('beta', 'os', name),
      (i) => i.status?.phase === 'Ready',
    );
  victimUrl = new URL((await ready(victim, 'secret')).status!.url!);
  ownUrl = new URL((await ready(attacker, 'mine')).status!.url!);
}, 120_000);

afterAll(async () => {
  await world?.close();
  if (victim) await deleteNamespace(cluster.kubeConfig, victim);
  if (tenant) await deleteNamespace(cluster.kubeConfig, tenant.namespace);
});

/** A download attempt gained nothing when it is 403 and carries none of the victim's bytes. */
async function gainedNothing(url: string): Promise<boolean> {
  const response = await fetch(url);
  const body = Buffer.from(await response.arrayBuffer());
  return response.status === 403 && !body.includes(secret.subarray(0, 64));
}

it('a guessed download URL of another namespace’s image (its name is known) gets 403 and no bytes', async () => {
  const guessed = `${victimUrl.origin}${victimUrl.pathname}`;
  const withOwnSignature = new URL(ownUrl);
  withOwnSignature.pathname = victimUrl.pathname;
  for (const url of [
    guessed,
    `${guessed}?uid=x&expires=99999999999&kid=local&signature=x`,
    withOwnSignature.toString(),
  ]) {
    const safe = await gainedNothing(url);
    tally.record('Attacks', safe);
    expect({ url, safe }).toEqual({ url, safe: true });
  }
});

it('a tampered signed URL (later expiry, other image, other kind) gets 403 and no bytes', async () => {
  const later = new URL(victimUrl);
  later.searchParams.set('expires', String(Number(later.searchParams.get('expires')) + 365 * 24 * 3600));
  const ownUidOnVictim = new URL(victimUrl);
  ownUidOnVictim.searchParams.set('uid', ownUrl.searchParams.get('uid')!);
  const flipped = new URL(victimUrl);
  const signature = flipped.searchParams.get('signature')!;
  flipped.searchParams.set('signature', `${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`);
  for (const url of [later, ownUidOnVictim, flipped].map(String)) {
    const safe = await gainedNothing(url);
    tally.record('Attacks', safe);
    expect({ url, safe }).toEqual({ url, safe: true });
  }
});

it('an upload over the namespace’s byte quota gets 413 and stores nothing', async () => {
  const over = await tusPost(
    world.service,
    tenantToken,
    { owner: tenant.namespace, cluster: 'beta', type: 'os', name: 'huge' },
    undefined,
    4 * MiB,
  );
  const safe = over.status === 413 && (await over.text()).includes(`Namespace ${tenant.namespace}`);
  tally.record('Attacks', safe);
  expect({ status: over.status, safe }).toEqual({ status: 413, safe: true });
});

it('a flood of bad tokens costs the API server a bounded number of TokenReviews and gets 429', async () => {
  const before = world.service.tokenReviews();
  const statuses: number[] = [];
  for (let i = 0; i < 50; i += 1) {
    const response = await fetch(`${world.service.url}/files`, {
      method: 'POST',
      headers: {
        authorization: `Bearer forged-${i}`,
        'tus-resumable': '1.0.0',
        'upload-length': '10',
        'upload-metadata': tusMetadata({ owner: victim, cluster: 'beta', type: 'os', name: 'x' }),
      },
    });
    statuses.push(response.status);
    await response.body?.cancel();
  }
  const reviews = world.service.tokenReviews() - before;
  const safe = reviews <= 5 && statuses.filter((s) => s === 429).length === 45;
  tally.record('Attacks', safe);
  expect({ reviews, limited: statuses.filter((s) => s === 429).length }).toEqual({ reviews: 5, limited: 45 });
});

it('a slow client holding half a request line is cut off (headers timeout)', async () => {
  const answer = await slowClient(world.service.port, 'GET /images/');
  const safe = answer === '' || answer.startsWith('HTTP/1.1 408');
  tally.record('Attacks', safe);
  expect(safe).toBe(true);
}, 30_000);

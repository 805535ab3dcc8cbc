/**
 * upsertConfigMap against a fake core client (unit): the requests it makes. A new ConfigMap costs
 * one create and no read (issue 26: API requests per Provisioning); one that exists answers the
 * create with 409, is read, and is left alone when it already holds the desired data or replaced
 * when not; one deleted between the read and the replace is created again.
 */
import { describe, expect, it } from '@jest/globals';
import { ApiException, type V1ConfigMap } from '@kubernetes/client-node';
import type { KubeClients } from '../../../shared/k8s/clients.js';
import { upsertConfigMap } from '../../../shared/k8s/config-maps.js';

const status = (code: number, reason: string) =>
  new ApiException(
    code,
    `HTTP-Code: ${code}`,
    JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code }),
    {},
  );

const desired: V1ConfigMap = {
  metadata: { name: 'edge-inventory', namespace: 'tenant', labels: { cluster: 'edge' } },
  data: { 'hosts.ini': '[all]\nnode-1\n' },
};

/** The API server as the fake keeps it: one ConfigMap or none, and every request in order. */
function fakeCore(initial: V1ConfigMap | undefined, options: { vanishOnReplace?: boolean } = {}) {
  let stored = initial;
  const requests: string[] = [];
  const core = {
    createNamespacedConfigMap: async ({ body }: { body: V1ConfigMap }) => {
      requests.push('POST');
      if (stored) throw status(409, 'AlreadyExists');
      stored = { ...body, metadata: { ...body.metadata, uid: 'cm-1', resourceVersion: '1' } };
      return stored;
    },
    readNamespacedConfigMap: async () => {
      requests.push('GET');
      if (!stored) throw status(404, 'NotFound');
      return stored;
    },
    replaceNamespacedConfigMap: async ({ body }: { body: V1ConfigMap }) => {
      requests.push('PUT');
      if (options.vanishOnReplace) {
        stored = undefined;
        options.vanishOnReplace = false;
        throw status(404, 'NotFound');
      }
      stored = body;
      return body;
    },
  };
  return { clients: { core } as unknown as KubeClients, requests, stored: () => stored };
}

describe('upsertConfigMap', () => {
  it('creates a new ConfigMap with one request, reading nothing', async () => {
    const fake = fakeCore(undefined);
    await expect(upsertConfigMap(fake.clients, desired)).resolves.toMatchObject({ outcome: 'created' });
    expect(fake.requests).toEqual(['POST']);
    expect(fake.stored()?.data).toEqual(desired.data);
  });

  it('reads one that exists after the 409 and leaves it alone when it holds the desired data', async () => {
    const fake = fakeCore({ ...desired, metadata: { ...desired.metadata, uid: 'cm-0' } });
    await expect(upsertConfigMap(fake.clients, desired)).resolves.toMatchObject({ outcome: 'unchanged' });
    expect(fake.requests).toEqual(['POST', 'GET']);
  });

  it('replaces one that exists with other data, keeping what others set on it', async () => {
    const fake = fakeCore({
      metadata: { ...desired.metadata, uid: 'cm-0', labels: { team: 'a' } },
      data: { 'hosts.ini': 'old' },
    });
    await expect(upsertConfigMap(fake.clients, desired)).resolves.toMatchObject({ outcome: 'updated' });
    expect(fake.requests).toEqual(['POST', 'GET', 'PUT']);
    expect(fake.stored()?.data).toEqual(desired.data);
    expect(fake.stored()?.metadata?.labels).toEqual({ team: 'a', cluster: 'edge' });
  });

  it('creates it again when it is deleted between the read and the replace', async () => {
    const fake = fakeCore(
      { metadata: { ...desired.metadata, uid: 'cm-0' }, data: { 'hosts.ini': 'old' } },
      { vanishOnReplace: true },
    );
    await expect(upsertConfigMap(fake.clients, desired)).resolves.toMatchObject({ outcome: 'created' });
    expect(fake.requests).toEqual(['POST', 'GET', 'PUT', 'GET', 'POST']);
  });
});

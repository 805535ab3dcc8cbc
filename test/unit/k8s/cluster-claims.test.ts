/**
 * claimClusterName against a fake Lease client (unit): the requests it makes. A free name costs
 * one create and no read (issue 26: API requests per Provisioning); a name this Provisioning
 * already holds answers the create with 409 and is read once; a name another live Provisioning
 * holds is reported as taken, its claim untouched.
 */
import { describe, expect, it } from '@jest/globals';
import { ApiException, type V1Lease } from '@kubernetes/client-node';
import { buildClusterClaim } from '../../../shared/core/cluster-claim.js';
import type { KubeClients } from '../../../shared/k8s/clients.js';
import { claimClusterName } from '../../../shared/k8s/cluster-claims.js';

const status = (code: number, reason: string) =>
  new ApiException(
    code,
    `HTTP-Code: ${code}`,
    JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code }),
    {},
  );

const me = { namespace: 'tenant', name: 'edge', uid: 'p-1' };
const other = { namespace: 'other', name: 'edge', uid: 'p-2' };

/** The Lease API as the fake keeps it, and every request in order. */
function fakeClients(initial: V1Lease | undefined) {
  let stored = initial;
  const requests: string[] = [];
  const leases = {
    createNamespacedLease: async ({ body }: { body: V1Lease }) => {
      requests.push('POST lease');
      if (stored) throw status(409, 'AlreadyExists');
      stored = { ...body, metadata: { ...body.metadata, resourceVersion: '1' } };
      return stored;
    },
    readNamespacedLease: async () => {
      requests.push('GET lease');
      if (!stored) throw status(404, 'NotFound');
      return stored;
    },
    deleteNamespacedLease: async () => {
      requests.push('DELETE lease');
      stored = undefined;
      return {};
    },
  };
  const custom = {
    // The other holder's Provisioning is still there.
    getNamespacedCustomObject: async () => {
      requests.push('GET provisioning');
      return { metadata: { name: other.name, namespace: other.namespace, uid: other.uid } };
    },
  };
  const clients = { kubeConfig: { makeApiClient: () => leases }, custom } as unknown as KubeClients;
  return { clients, requests, stored: () => stored };
}

describe('claimClusterName', () => {
  it('claims a free name with one create, reading nothing', async () => {
    const fake = fakeClients(undefined);
    await expect(claimClusterName(fake.clients, 'bpa-system', 'edge', me)).resolves.toEqual({ kind: 'mine' });
    expect(fake.requests).toEqual(['POST lease']);
    expect(fake.stored()?.spec?.holderIdentity).toBe('tenant/edge');
  });

  it('reads a claim after the 409 and finds it its own', async () => {
    const fake = fakeClients(buildClusterClaim('bpa-system', 'edge', me));
    await expect(claimClusterName(fake.clients, 'bpa-system', 'edge', me)).resolves.toEqual({ kind: 'mine' });
    expect(fake.requests).toEqual(['POST lease', 'GET lease']);
  });

  it("reports another live Provisioning's claim as taken and leaves it alone", async () => {
    const fake = fakeClients(buildClusterClaim('bpa-system', 'edge', other));
    await expect(claimClusterName(fake.clients, 'bpa-system', 'edge', me)).resolves.toEqual({
      kind: 'taken',
      holder: other,
    });
    expect(fake.requests).toEqual(['POST lease', 'GET lease', 'GET provisioning']);
    expect(fake.stored()?.spec?.holderIdentity).toBe('other/edge');
  });
});

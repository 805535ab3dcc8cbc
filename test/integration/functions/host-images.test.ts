/**
 * A Provisioning that names an Image (issue 12 item 5), on the real API server with Metal3's
 * real BareMetalHost CRD (METAL3_CRDS_DIR): host-lookup writes the Image's URL and sha256 into
 * spec.image of the hosts that have none or have one this project wrote, leaves someone else's
 * image alone and reports it, and writes nothing while the Image is missing or not Ready.
 * host-lookup runs behind its real HTTP server; the Image's status is written as image-verify
 * writes it (that function and the store are exercised in test/integration/images/).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { hostImageAnnotation } from '../../../shared/core/host-image.js';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { ChainHarness, sourceEvent } from './support/chain-harness.js';
import {
  conditionOf,
  createBareMetalHost,
  createImage as createImageWithStatus,
  createProvisioning,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster();
const bmh = { group: 'metal3.io', version: 'v1alpha1', plural: 'baremetalhosts' } as const;
const sha256 = 'c0ffee'.padEnd(64, '0');
const foreignImage = {
  url: 'http://mirror.example/other.qcow2',
  checksum: 'b'.repeat(64),
  checksumType: 'sha256',
  format: 'qcow2',
};

interface StoredHost {
  metadata: { annotations?: Record<string, string>; resourceVersion: string };
  spec: { image?: Record<string, string> };
}

describe('spec.image of a Provisioning', () => {
  let harness: ChainHarness;
  const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const readHost = async (name: string) =>
    (await custom().getNamespacedCustomObject({ ...bmh, namespace: cluster.namespace, name })) as StoredHost;

  /** An Image as image-verify leaves it: phase Ready with URL and sha256, or still Uploaded. */
  const createImage = (name: string, phase: 'Ready' | 'Uploaded') =>
    createImageWithStatus(cluster.kubeConfig, {
      name,
      namespace: cluster.namespace,
      clusterName: 'edge',
      status:
        phase === 'Ready'
          ? { phase, sha256, url: `http://image-download.test/images/${cluster.namespace}/${name}` }
          : { phase },
    });

  beforeAll(async () => {
    const namespace = cluster.namespace;
    await createImage('edge.os.node', 'Ready');
    await createImage('edge.os.pending', 'Uploaded');
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'unset',
      namespace,
      bootMac: 'aa:bb:cc:00:12:01',
      nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:12:01', ip: '10.12.0.1' }],
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'foreign',
      namespace,
      bootMac: 'aa:bb:cc:00:12:02',
      nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:12:02', ip: '10.12.0.2' }],
      image: foreignImage,
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'managed',
      namespace,
      bootMac: 'aa:bb:cc:00:12:03',
      nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:12:03', ip: '10.12.0.3' }],
      annotations: { [hostImageAnnotation]: `${namespace}/edge.os.old` },
      image: { url: 'http://image-download.test/old', checksum: 'a'.repeat(64), checksumType: 'sha256' },
    });
    harness = new ChainHarness(cluster.kubeConfig, { BMH_NAMESPACE: namespace, IP_SOURCES: 'nics' });
    await harness.start([hostLookup]);
  });

  afterAll(async () => {
    await harness?.stop();
  });

  const provision = async (name: string, image: string, macs: string[]) => {
    const object = provisioningObject({
      name,
      namespace: cluster.namespace,
      cluster: name,
      masters: macs.map((mac, i) => ({ label: `node-${i + 1}`, mac })),
    });
    const created = await createProvisioning(cluster.kubeConfig, {
      ...object,
      spec: { ...object.spec, image: { name: image } } as typeof object.spec,
    });
    return harness.publish(sourceEvent('add', created));
  };

  it('writes nothing and says why while the Image is not Ready, or missing', async () => {
    const before = await Promise.all(['unset', 'foreign', 'managed'].map(readHost));
    for (const [name, image, reason] of [
      ['waits', 'edge.os.pending', 'ImageNotReady'],
      ['missing', 'edge.os.absent', 'ImageNotFound'],
    ] as const) {
      const deliveries = await provision(name, image, ['aa:bb:cc:00:12:01', 'aa:bb:cc:00:12:03']);
      expect(deliveries.map((d) => [d.status, d.reply?.type])).toEqual([
        [200, EventTypes.provisioningFailed],
      ]);
      const status = await readProvisioning(cluster.kubeConfig, cluster.namespace, name);
      expect(conditionOf(status, 'HostsResolved')).toMatchObject({ status: 'False', reason });
      expect(conditionOf(status, 'HostsResolved')?.message).toContain(`${cluster.namespace}/${image}`);
      expect(conditionOf(status, 'Ready')).toMatchObject({ status: 'False', reason });
    }
    const after = await Promise.all(['unset', 'foreign', 'managed'].map(readHost));
    expect(after.map((h) => h.metadata.resourceVersion)).toEqual(
      before.map((h) => h.metadata.resourceVersion),
    );
  });

  it('sets an unset image, updates its own, keeps and reports a foreign one', async () => {
    const namespace = cluster.namespace;
    const deliveries = await provision('edge', 'edge.os.node', [
      'aa:bb:cc:00:12:01',
      'aa:bb:cc:00:12:02',
      'aa:bb:cc:00:12:03',
    ]);
    expect(deliveries.map((d) => [d.status, d.reply?.type])).toEqual([[200, EventTypes.hostsResolved]]);
    const expected = {
      url: `http://image-download.test/images/${namespace}/edge.os.node`,
      checksum: sha256,
      checksumType: 'sha256',
      format: 'raw',
    };
    for (const name of ['unset', 'managed']) {
      const host = await readHost(name);
      expect(host.spec.image).toEqual(expected);
      expect(host.metadata.annotations?.[hostImageAnnotation]).toBe(`${namespace}/edge.os.node`);
    }
    const foreign = await readHost('foreign');
    expect(foreign.spec.image).toEqual(foreignImage);
    expect(foreign.metadata.annotations?.[hostImageAnnotation]).toBeUndefined();

    const status = (await readProvisioning(cluster.kubeConfig, namespace, 'edge')) as {
      status?: { image?: unknown; conditions?: { type: string; message?: string }[] };
    };
    expect(status.status?.image).toEqual({
      name: 'edge.os.node',
      url: expected.url,
      sha256,
      hosts: [`${namespace}/unset`, `${namespace}/managed`],
      foreignHosts: [`${namespace}/foreign`],
    });
    expect(conditionOf(status as never, 'HostsResolved')?.message).toBe(
      `Resolved 3 nodes (3 from host-nics); image edge.os.node on 2 hosts, 1 keeps its own image (${namespace}/foreign)`,
    );
    const events = await cluster.kubeConfig.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace });
    const warning = events.items.find(
      (e) => e.involvedObject.name === 'edge' && e.reason === 'ForeignHostImage',
    );
    expect(warning).toMatchObject({ type: 'Warning' });
    expect(warning?.message).toContain(`${namespace}/foreign`);
  });
});

/**
 * host-lookup's BareMetalHost index (functions/host-lookup/host-watch.ts) through the fault proxy
 * in front of the real kube-apiserver (test/support/faults/api-proxy.ts):
 * - it connects: one paged list, one watch, and hosts created afterwards reach it by the watch,
 *   with no list of its own (before, the proxy held back a quiet watch's response head, so the
 *   watch never connected and every lookup listed after a 10 s start timeout);
 * - its watch ended by the proxy: it watches again, and a host created after that is seen.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WatchedHostIndex } from '../../functions/host-lookup/host-watch.js';
import { silentLogger } from '../../shared/log.js';
import { useTestCluster } from '../support/cluster.js';
import { startApiProxy, type ApiProxy } from '../support/faults/api-proxy.js';
import { createBareMetalHost } from '../integration/functions/support/fixtures.js';
import { waitFor } from '../unit/broker/support/recording-subscriber.js';

const cluster = useTestCluster();
const mac = (i: number) => `ee:00:00:00:00:${String(i).padStart(2, '0')}`;

describe('the BareMetalHost index through the fault proxy', () => {
  let proxy: ApiProxy;
  let index: WatchedHostIndex;
  const hostRequests = (kind: 'list' | 'watch') =>
    proxy.requests.filter(
      (r) => r.url.includes('/baremetalhosts') && r.url.includes('watch=true') === (kind === 'watch'),
    );
  const host = (i: number) =>
    createBareMetalHost(cluster.kubeConfig, {
      name: `w-${i}`,
      namespace: cluster.namespace,
      bootMac: mac(i),
      nics: [{ name: 'eth0', mac: mac(i), ip: `10.50.0.${i}` }],
    });

  beforeAll(async () => {
    await host(1);
    proxy = await startApiProxy(cluster.kubeConfig);
    index = new WatchedHostIndex(proxy.kubeConfig, cluster.namespace, silentLogger);
  });
  afterAll(async () => {
    await index?.stop();
    await proxy?.close();
  });

  it('connects its watch: hosts created later arrive by the watch, not by lists', async () => {
    const found = await index.hostsByMac(new Set([mac(1)]));
    expect(found.get(mac(1))).toMatchObject({ host: `${cluster.namespace}/w-1` });
    expect(hostRequests('list')).toHaveLength(1);
    expect(hostRequests('watch')).toHaveLength(1);

    await host(2);
    await waitFor(() => index.entryFor(mac(2)) !== undefined, 20_000, 'w-2 from the watch');
    const later = await index.hostsByMac(new Set([mac(1), mac(2)]));
    expect([...later.keys()].sort()).toEqual([mac(1), mac(2)]);
    expect(hostRequests('list')).toHaveLength(1);
  });

  it('watches again when the proxy ends its watch, and sees what changed after', async () => {
    const watches = hostRequests('watch').length;
    expect(proxy.dropWatches()).toBeGreaterThan(0);
    await waitFor(() => hostRequests('watch').length > watches, 30_000, 'a new watch');
    await host(3);
    await waitFor(() => index.entryFor(mac(3)) !== undefined, 30_000, 'w-3 after the drop');
    const found = await index.hostsByMac(new Set([mac(3)]));
    expect(found.get(mac(3))).toMatchObject({ host: `${cluster.namespace}/w-3` });
  });
});

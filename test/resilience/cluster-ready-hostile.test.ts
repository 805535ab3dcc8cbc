/**
 * Regression: a cluster.ready event whose `cluster` is not a valid label value (e.g.
 * `--allow-unauthenticated` or `a;b`) or whose provisioning namespace is not a valid name (e.g.
 * `/x`) once reached a label selector / API path and came back as HTTP 500 (retried ten times,
 * then dead-lettered). The event schema now requires Kubernetes names, so the answer is a 400
 * that the broker does not retry, and no SSH session starts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CloudEvent } from 'cloudevents';
import { definition as softwareInstall } from '../../functions/software-install/index.js';
import { postEvent } from '../../shared/cloudevents/sink-client.js';
import { EventTypes } from '../../shared/events/types.js';
import { silentLogger } from '../../shared/log.js';
import { startFunctionServer, type RunningFunctionServer } from '../../shared/server/function-server.js';
import { useTestCluster } from '../support/cluster.js';

const cluster = useTestCluster();

const clusterReady = (namespace: string, clusterName: string) =>
  new CloudEvent<unknown>({
    type: EventTypes.clusterReady,
    source: '/resilience/known-defects',
    datacontenttype: 'application/json',
    data: {
      provisioning: { namespace, name: 'p', uid: 'uid-1', generation: 1 },
      cluster: clusterName,
      configMap: 'edge-1-configmap',
      nodes: [
        {
          label: 'master-1',
          roles: ['master'],
          mac: 'aa:bb:cc:dd:ee:01',
          ip: '10.0.0.1',
          source: 'dhcp-leases',
        },
      ],
    },
  });

describe('software-install and a cluster.ready with a hostile cluster or namespace', () => {
  let server: RunningFunctionServer;
  beforeAll(async () => {
    server = await startFunctionServer({
      definition: softwareInstall,
      host: '127.0.0.1',
      port: 0,
      kubeConfig: cluster.kubeConfig,
      env: {},
      log: silentLogger,
      tracing: false,
      processMetrics: false,
    });
  });
  afterAll(async () => server?.close());

  it.each([
    ['cluster', () => clusterReady(cluster.namespace, '--allow-unauthenticated')],
    ['cluster', () => clusterReady(cluster.namespace, 'a;b')],
    ['namespace', () => clusterReady('/x', 'edge-1')],
  ])('answers a clear 4xx for a hostile %s, not 500', async (_what, event) => {
    const response = await postEvent(server.url, event(), { timeoutMs: 30_000 });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
  });
});

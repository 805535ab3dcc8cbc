/**
 * Event fault: a function that answers 5xx until the broker's retries run out. host-lookup runs
 * behind the real embedded broker (local/broker) with a Trigger whose delivery has 2 retries and
 * a dead-letter sink; its API server connection answers 500 to every BareMetalHost list. The
 * event must reach the dead-letter sink with Knative's knativeerror* extensions, and the
 * Provisioning's status must say what failed (HostsResolved=Unknown with the fault's reason,
 * recorded before each 5xx answer: shared/k8s/retrying-condition.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { definition as hostLookup } from '../../functions/host-lookup/index.js';
import { startBroker, type RunningBroker } from '../../local/broker/index.js';
import { silentLogger } from '../../shared/log.js';
import { startFunctionServer, type RunningFunctionServer } from '../../shared/server/function-server.js';
import { useTestCluster } from '../support/cluster.js';
import { startApiProxy, type ApiProxy } from '../support/faults/api-proxy.js';
import { sourceEvent } from '../integration/functions/support/chain-harness.js';
import { createProvisioning } from '../integration/functions/support/fixtures.js';
import {
  brokerObject,
  postEvent,
  startSubscriber,
  triggerObject,
  type RecordingSubscriber,
} from '../unit/broker/support/recording-subscriber.js';
import { FaultTally } from './report/tally.js';
import { conditionsOf } from './support/faulty-chain.js';
import { clusterProvisioning } from './support/lab-cluster.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url.replace(/\.test\.ts$/, '-known-defect.test.ts'));

describe('a function failing until the retries run out', () => {
  let proxy: ApiProxy;
  let server: RunningFunctionServer;
  let broker: RunningBroker;
  let deadLetters: RecordingSubscriber;

  beforeAll(async () => {
    proxy = await startApiProxy(cluster.kubeConfig);
    proxy.failNext((r) => r.method === 'GET' && r.url.includes('/baremetalhosts'), 500, Infinity);
    server = await startFunctionServer({
      definition: hostLookup,
      host: '127.0.0.1',
      port: 0,
      kubeConfig: proxy.kubeConfig,
      env: { BMH_NAMESPACE: cluster.namespace, IP_SOURCES: 'nics' },
      log: silentLogger,
      tracing: false,
      processMetrics: false,
    });
    deadLetters = await startSubscriber(() => ({ status: 202 }));
    const namespace = cluster.namespace;
    broker = await startBroker({
      objects: [
        brokerObject('default', undefined, namespace),
        triggerObject(
          'host-lookup',
          server.url,
          {
            filter: { attributes: { type: 'dev.knative.apiserver.resource.add', kind: 'Provisioning' } },
            delivery: {
              retry: 2,
              backoffPolicy: 'linear',
              backoffDelay: 'PT0.1S',
              deadLetterSink: { uri: deadLetters.url },
            },
          },
          'default',
          namespace,
        ),
      ],
      resolveRef: () => {
        throw new Error('no refs');
      },
      log: silentLogger,
    });
  });

  afterAll(async () => {
    await broker?.close();
    await server?.close();
    await deadLetters?.close();
    await proxy?.close();
  });

  it('dead-letters the event with its error extensions and says on status what failed', async () => {
    const provisioning = await createProvisioning(
      cluster.kubeConfig,
      clusterProvisioning(cluster.namespace, 90, 'dead-end', 1, 0),
    );
    const accepted = await postEvent(
      broker.ingressUrl(cluster.namespace, 'default'),
      sourceEvent('add', provisioning),
    );
    expect(accepted.status).toBe(202);
    const [dead] = await deadLetters.waitForCount(1, 60_000);
    const event = dead!.event;
    const data = Buffer.from(String(event['knativeerrordata']), 'base64').toString('utf8');
    const extensionsOk =
      String(event['knativeerrordest']).replace(/\/$/, '') === server.url &&
      /^5\d\d$/.test(String(event['knativeerrorcode'])) &&
      /"reason":"[A-Z]\w+"/.test(data);
    expect({
      dest: String(event['knativeerrordest']).replace(/\/$/, ''),
      code: String(event['knativeerrorcode']),
    }).toEqual({
      dest: server.url,
      code: expect.stringMatching(/^5\d\d$/),
    });
    expect(JSON.parse(data)).toEqual({
      error: { reason: expect.stringMatching(/^[A-Z]\w+$/), message: expect.any(String) },
    });
    expect(event.type).toBe('dev.knative.apiserver.resource.add');
    expect(event['name']).toBe('dead-end');

    const conditions = await conditionsOf(cluster.kubeConfig, 'provisionings', cluster.namespace, 'dead-end');
    const said = conditions.find(
      (c) => c.type === 'HostsResolved' && c.status !== 'True' && (c.message ?? '').length > 0,
    );
    tally.record('Event faults', extensionsOk && said !== undefined);
    tally.note(
      `500 until retries ran out: dead letter with knativeerrorcode ${String(event['knativeerrorcode'])}, data ${data.slice(0, 160)}; status: ${said ? `${said.type}=${said.status} ${said.reason}: ${said.message}` : `nothing (${JSON.stringify(conditions)})`}`,
    );
    expect(said).toBeDefined();
  }, 120_000);
});

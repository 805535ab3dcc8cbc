import { CloudEvent } from 'cloudevents';
import { silentLogger } from '../../../shared/log.js';
import { startBroker, type DeliveryRecord, type RunningBroker } from '../../../local/broker/index.js';
import {
  brokerObject,
  postEvent,
  startSubscriber,
  triggerObject,
  waitFor,
  type RecordingSubscriber,
  type Script,
} from './support/recording-subscriber.js';

const resolveRef = () => {
  throw new Error('no refs in this test');
};

/** Starts a subscriber, a dead-letter sink and a broker with one trigger using `delivery`. */
async function setup(script: Script, delivery: Record<string, unknown> | undefined, withDls = true) {
  const subscriber = await startSubscriber(script);
  const deadLetters = await startSubscriber();
  const records: DeliveryRecord[] = [];
  const triggerDelivery = delivery
    ? { ...delivery, ...(withDls ? { deadLetterSink: { uri: deadLetters.url } } : {}) }
    : undefined;
  const broker = await startBroker({
    objects: [
      brokerObject('default', { retry: 0 }),
      triggerObject('t1', subscriber.url, triggerDelivery ? { delivery: triggerDelivery } : {}),
    ],
    resolveRef,
    log: silentLogger,
    onDelivery: (record) => records.push(record),
  });
  return { subscriber, deadLetters, broker, records };
}

let running: { subscriber: RecordingSubscriber; deadLetters: RecordingSubscriber; broker: RunningBroker }[] =
  [];
afterEach(async () => {
  for (const { broker, subscriber, deadLetters } of running) {
    await broker.close();
    await subscriber.close();
    await deadLetters.close();
  }
  running = [];
});
async function started(...args: Parameters<typeof setup>) {
  const context = await setup(...args);
  running.push(context);
  return context;
}

const ping = (extra: Record<string, unknown> = {}) =>
  new CloudEvent({ type: 'com.example.ping', source: '/test', subject: 's1', data: { n: 1 }, ...extra });
const finalOutcome = (records: DeliveryRecord[]) => records.filter((r) => r.outcome !== 'retry');

describe('broker delivery: retries', () => {
  it('retries 500 and delivers on the third attempt', async () => {
    const { subscriber, broker, records, deadLetters } = await started(
      (_request, index) => ({ status: index < 2 ? 500 : 200 }),
      { retry: 3 },
    );
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    await waitFor(() => finalOutcome(records).length === 1);
    expect(subscriber.received).toHaveLength(3);
    expect(records.map((r) => [r.attempt, r.status, r.outcome])).toEqual([
      [1, 500, 'retry'],
      [2, 500, 'retry'],
      [3, 200, 'delivered'],
    ]);
    expect(deadLetters.received).toHaveLength(0);
  });

  it.each([404, 408, 409, 429, 503])('retries %i', async (status) => {
    const { subscriber, broker, records } = await started(
      (_r, index) => ({ status: index === 0 ? status : 202 }),
      {
        retry: 2,
      },
    );
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    await waitFor(() => finalOutcome(records).length === 1);
    expect(subscriber.received).toHaveLength(2);
    expect(finalOutcome(records)[0]!.outcome).toBe('delivered');
  });

  it.each([400, 401, 403, 410, 422, 301, 302])(
    'does not retry %i and dead-letters at once',
    async (status) => {
      const { subscriber, broker, records, deadLetters } = await started(
        () => ({ status, ...(status < 400 ? { headers: { location: 'http://127.0.0.1:1/' } } : {}) }),
        { retry: 3 },
      );
      await postEvent(broker.ingressUrl('test', 'default'), ping());
      await deadLetters.waitForCount(1);
      await waitFor(() => finalOutcome(records).length === 1);
      expect(subscriber.received).toHaveLength(1);
      expect(records).toEqual([expect.objectContaining({ attempt: 1, status, outcome: 'dead-lettered' })]);
      expect(deadLetters.received[0]!.headers['ce-knativeerrorcode']).toBe(String(status));
    },
  );

  it('makes exactly retry+1 attempts and then dead-letters', async () => {
    const { subscriber, broker, records, deadLetters } = await started(() => ({ status: 500 }), { retry: 4 });
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    await deadLetters.waitForCount(1);
    await waitFor(() => finalOutcome(records).length === 1);
    expect(subscriber.received).toHaveLength(5);
    expect(records.map((r) => r.outcome)).toEqual(['retry', 'retry', 'retry', 'retry', 'dead-lettered']);
  });

  it('drops (and reports) a failed event when no dead-letter sink is configured', async () => {
    const { subscriber, broker, records } = await started(() => ({ status: 500 }), { retry: 1 }, false);
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    await waitFor(() => finalOutcome(records).length === 1);
    expect(subscriber.received).toHaveLength(2);
    expect(finalOutcome(records)[0]).toEqual(expect.objectContaining({ outcome: 'dropped', status: 500 }));
  });

  it("uses the Broker's delivery when the Trigger has none, and the Trigger's replaces it wholesale", async () => {
    const subscriber = await startSubscriber(() => ({ status: 500 }));
    const brokerDls = await startSubscriber();
    const records: DeliveryRecord[] = [];
    const broker = await startBroker({
      objects: [
        brokerObject('default', { retry: 1, deadLetterSink: { uri: brokerDls.url } }),
        triggerObject('inherits', subscriber.url, { filter: { attributes: { type: 'a' } } }),
        triggerObject('own', subscriber.url, {
          filter: { attributes: { type: 'b' } },
          delivery: { retry: 2 },
        }),
      ],
      resolveRef,
      log: silentLogger,
      onDelivery: (record) => records.push(record),
    });
    try {
      await postEvent(broker.ingressUrl('test', 'default'), ping({ type: 'a' }));
      await postEvent(broker.ingressUrl('test', 'default'), ping({ type: 'b' }));
      await waitFor(() => finalOutcome(records).length === 2);
      const inherits = records.filter((r) => r.trigger === 'inherits');
      const own = records.filter((r) => r.trigger === 'own');
      expect(inherits.map((r) => r.outcome)).toEqual(['retry', 'dead-lettered']);
      // The Trigger's delivery has no dead-letter sink: the Broker's is not merged in.
      expect(own.map((r) => r.outcome)).toEqual(['retry', 'retry', 'dropped']);
      expect(brokerDls.received).toHaveLength(1);
      expect(brokerDls.received[0]!.headers['ce-type']).toBe('a');
    } finally {
      await broker.close();
      await subscriber.close();
      await brokerDls.close();
    }
  });

  it('retries connection errors and reports them as 500 dispatch errors to the dead-letter sink', async () => {
    const gone = await startSubscriber();
    const goneUrl = gone.url;
    await gone.close();
    const deadLetters = await startSubscriber();
    const records: DeliveryRecord[] = [];
    const broker = await startBroker({
      objects: [
        brokerObject('default'),
        triggerObject('t1', goneUrl, { delivery: { retry: 2, deadLetterSink: { uri: deadLetters.url } } }),
      ],
      resolveRef,
      log: silentLogger,
      onDelivery: (record) => records.push(record),
    });
    try {
      await postEvent(broker.ingressUrl('test', 'default'), ping());
      await deadLetters.waitForCount(1);
      await waitFor(() => finalOutcome(records).length === 1);
      expect(records.map((r) => [r.status, r.outcome])).toEqual([
        [null, 'retry'],
        [null, 'retry'],
        [null, 'dead-lettered'],
      ]);
      const headers = deadLetters.received[0]!.headers;
      expect(headers['ce-knativeerrorcode']).toBe('500');
      expect(headers['ce-knativeerrordest']).toBe(goneUrl);
      const data = Buffer.from(headers['ce-knativeerrordata'] as string, 'base64').toString('utf8');
      expect(data).toMatch(/^dispatch error: .*ECONNREFUSED/);
    } finally {
      await broker.close();
      await deadLetters.close();
    }
  });
});

describe('broker delivery: backoff and timeouts', () => {
  const gaps = (times: number[]) => times.slice(1).map((time, i) => time - times[i]!);

  it('waits delay, 2·delay, 4·delay between exponential retries', async () => {
    const { subscriber, broker, records } = await started(() => ({ status: 500 }), {
      retry: 3,
      backoffPolicy: 'exponential',
      backoffDelay: 'PT0.1S',
    });
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    await waitFor(() => finalOutcome(records).length === 1);
    const waits = gaps(subscriber.received.map((r) => r.at));
    expect(waits).toHaveLength(3);
    // Lower bounds only (a loaded machine makes waits longer, never shorter); 5 ms for timer slack.
    expect(waits[0]).toBeGreaterThanOrEqual(95);
    expect(waits[1]).toBeGreaterThanOrEqual(195);
    expect(waits[2]).toBeGreaterThanOrEqual(395);
  });

  it('waits 0, delay, 2·delay between linear retries (Knative counts attempts from zero)', async () => {
    const { subscriber, broker, records } = await started(() => ({ status: 500 }), {
      retry: 3,
      backoffPolicy: 'linear',
      backoffDelay: 'PT0.15S',
    });
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    await waitFor(() => finalOutcome(records).length === 1);
    const waits = gaps(subscriber.received.map((r) => r.at));
    expect(waits[1]).toBeGreaterThanOrEqual(145);
    expect(waits[2]).toBeGreaterThanOrEqual(295);
    expect(waits[2]!).toBeGreaterThan(waits[0]!);
  });

  it('gives up on an attempt after the per-attempt timeout and retries', async () => {
    const { subscriber, broker, records } = await started(
      (_r, index) => (index === 0 ? { status: 200, delayMs: 5000 } : { status: 200 }),
      { retry: 1, timeout: 'PT0.2S' },
    );
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    await waitFor(() => finalOutcome(records).length === 1);
    expect(subscriber.received).toHaveLength(2);
    expect(records[0]).toEqual(expect.objectContaining({ attempt: 1, status: null, outcome: 'retry' }));
    expect(records[0]!.reason).toMatch(/timeout/);
    expect(records[0]!.latencyMs).toBeGreaterThanOrEqual(190);
    expect(records[1]).toEqual(expect.objectContaining({ attempt: 2, status: 200, outcome: 'delivered' }));
  });
});

describe('broker delivery: headers and dead-letter extensions', () => {
  it('sends Prefer: reply, Kn-Namespace and the caller’s trace context', async () => {
    const { subscriber, broker } = await started(() => ({ status: 202 }), undefined);
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await postEvent(broker.ingressUrl('test', 'default'), ping(), 'binary', {
      traceparent,
      tracestate: 'vendor=value',
    });
    const [received] = await subscriber.waitForCount(1);
    expect(received!.headers.prefer).toBe('reply');
    expect(received!.headers['kn-namespace']).toBe('test');
    const sentTrace = (received!.headers.traceparent as string).split('-');
    expect(sentTrace[1]).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(sentTrace[2]).not.toBe('b7ad6b7169203331');
    expect(received!.headers.tracestate).toBe('vendor=value');
  });

  it('starts a trace when the producer sent none', async () => {
    const { subscriber, broker } = await started(() => ({ status: 202 }), undefined);
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    const [received] = await subscriber.waitForCount(1);
    expect(received!.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  });

  it('dead-letters with knativeerrordest, knativeerrorcode and base64 knativeerrordata cut to 1024', async () => {
    const longBody = 'x'.repeat(2000);
    const { subscriber, broker, deadLetters } = await started(() => ({ status: 422, body: longBody }), {
      retry: 2,
    });
    const sent = ping();
    await postEvent(broker.ingressUrl('test', 'default'), sent);
    const [dead] = await deadLetters.waitForCount(1);
    expect(dead!.headers['ce-id']).toBe(sent.id);
    expect(dead!.headers['ce-type']).toBe('com.example.ping');
    expect(dead!.headers['ce-knativeerrordest']).toBe(subscriber.url);
    expect(dead!.headers['ce-knativeerrorcode']).toBe('422');
    const errorData = dead!.headers['ce-knativeerrordata'] as string;
    expect(errorData).toHaveLength(1024);
    expect(errorData).toBe(Buffer.from(longBody).toString('base64').slice(0, 1024));
    expect(JSON.parse(dead!.body.toString('utf8'))).toEqual({ n: 1 });
  });

  it('keeps a short error body whole', async () => {
    const { broker, deadLetters } = await started(() => ({ status: 400, body: 'bad input' }), { retry: 0 });
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    const [dead] = await deadLetters.waitForCount(1);
    expect(Buffer.from(dead!.headers['ce-knativeerrordata'] as string, 'base64').toString()).toBe(
      'bad input',
    );
  });
});

describe('broker delivery: knativeerrordest names the subscriber as Knative resolves it', () => {
  it('a ref to a Knative Service: its in-cluster address, not the loopback URL dialed', async () => {
    const subscriber = await startSubscriber(() => ({ status: 503 }));
    const deadLetters = await startSubscriber();
    const broker = await startBroker({
      objects: [
        brokerObject('default', { retry: 0 }),
        {
          ...triggerObject('t1', '', { delivery: { retry: 1, deadLetterSink: { uri: deadLetters.url } } }),
          spec: {
            broker: 'default',
            subscriber: {
              ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'host-lookup' },
            },
            delivery: { retry: 1, deadLetterSink: { uri: deadLetters.url } },
          },
        },
      ],
      // A local stack runs the function on loopback.
      resolveRef: () => subscriber.url,
      log: silentLogger,
    });
    running.push({ subscriber, deadLetters, broker });
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    const [dead] = await deadLetters.waitForCount(1);
    expect(subscriber.received).toHaveLength(2);
    // knative.dev/pkg's resolver (what the MT broker's filter dials and reports) gives no path.
    expect(dead!.headers['ce-knativeerrordest']).toBe('http://host-lookup.test.svc.cluster.local');
    expect(dead!.headers['ce-knativeerrorcode']).toBe('503');
  });
});

describe('broker delivery: shutdown', () => {
  it('close() waits for in-flight deliveries to finish', async () => {
    const { subscriber, broker, records } = await started(() => ({ status: 200, delayMs: 300 }), undefined);
    await postEvent(broker.ingressUrl('test', 'default'), ping());
    await subscriber.waitForCount(1);
    await broker.close();
    expect(records).toEqual([expect.objectContaining({ outcome: 'delivered', status: 200 })]);
  });

  it('close() aborts deliveries still waiting after the drain bound', async () => {
    const subscriber = await startSubscriber(() => ({ status: 500 }));
    const records: DeliveryRecord[] = [];
    const broker = await startBroker({
      objects: [
        brokerObject('default'),
        triggerObject('t1', subscriber.url, {
          delivery: { retry: 5, backoffPolicy: 'exponential', backoffDelay: 'PT10S' },
        }),
      ],
      resolveRef,
      log: silentLogger,
      drainTimeoutMs: 200,
      onDelivery: (record) => records.push(record),
    });
    try {
      await postEvent(broker.ingressUrl('test', 'default'), ping());
      await subscriber.waitForCount(1);
      const started = Date.now();
      await broker.close();
      expect(Date.now() - started).toBeLessThan(5000);
      expect(broker.inFlight()).toBe(0);
      expect(records.at(-1)).toEqual(expect.objectContaining({ outcome: 'dropped' }));
    } finally {
      await subscriber.close();
    }
  });
});

import { CloudEvent, HTTP } from 'cloudevents';
import { silentLogger } from '../../../shared/log.js';
import { startBroker, type DeliveryRecord } from '../../../local/broker/index.js';
import { compileTriggerFilter } from '../../../local/broker/filters.js';
import type { RawEvent } from '../../../shared/cloudevents/http-codec.js';
import {
  brokerObject,
  postEvent,
  startSubscriber,
  triggerObject,
  waitFor,
  type RecordingSubscriber,
} from './support/recording-subscriber.js';

const resolveRef = () => {
  throw new Error('no refs in this test');
};
const ping = (extra: Record<string, unknown> = {}) =>
  new CloudEvent({ type: 'com.example.ping', source: '/test', data: { n: 1 }, ...extra });

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
async function subscriber(...args: Parameters<typeof startSubscriber>): Promise<RecordingSubscriber> {
  const started = await startSubscriber(...args);
  closers.push(() => started.close());
  return started;
}
async function broker(objects: unknown[], records: DeliveryRecord[] = []) {
  const started = await startBroker({
    objects,
    resolveRef,
    log: silentLogger,
    onDelivery: (r) => records.push(r),
  });
  closers.push(() => started.close());
  return started;
}

describe('replies', () => {
  it('routes a binary CloudEvent reply back into the broker to the matching trigger', async () => {
    const replyEvent = new CloudEvent({ type: 'com.example.pong', source: '/replier', data: { ok: true } });
    const replier = await subscriber(() => {
      const message = HTTP.binary(replyEvent);
      return {
        status: 200,
        headers: message.headers as Record<string, string>,
        body: message.body as string,
      };
    });
    const observer = await subscriber();
    const records: DeliveryRecord[] = [];
    const running = await broker(
      [
        brokerObject('default'),
        triggerObject('pings', replier.url, { filter: { attributes: { type: 'com.example.ping' } } }),
        triggerObject('pongs', observer.url, { filter: { attributes: { type: 'com.example.pong' } } }),
      ],
      records,
    );
    await postEvent(running.ingressUrl('test', 'default'), ping());
    const [received] = await observer.waitForCount(1);
    expect(received!.headers['ce-id']).toBe(replyEvent.id);
    expect(received!.headers['ce-source']).toBe('/replier');
    expect(received!.headers['ce-knativearrivaltime']).toBeDefined();
    expect(received!.headers['ce-knativebrokerttl']).toBeUndefined();
    expect(JSON.parse(received!.body.toString())).toEqual({ ok: true });
    expect(replier.received).toHaveLength(1);
    expect(records.find((r) => r.trigger === 'pings')).toEqual(expect.objectContaining({ replied: true }));
  });

  it('sends a reply on in the trace of the delivery that produced it, not the subscriber’s answer header', async () => {
    // Knative's filter passes on only x-request-id, retry-after, knative-* and x-b3-* of a
    // subscriber's answer (pkg/utils/headers.go), and the channel dispatcher posts the reply in
    // the context of the delivery (docs/knative.md "Trace context"). The reply's own
    // distributed-tracing extension travels untouched.
    const deliveredTrace = '0af7651916cd43dd8448eb211c80319c';
    const answerTrace = 'f'.repeat(31) + '1';
    const extension = `00-${'e'.repeat(31)}1-${'a'.repeat(16)}-01`;
    const replier = await subscriber(() => {
      const message = HTTP.binary(
        new CloudEvent({ type: 'com.example.pong', source: '/replier', data: 'x', traceparent: extension }),
      );
      return {
        status: 200,
        headers: {
          ...(message.headers as Record<string, string>),
          traceparent: `00-${answerTrace}-${'b'.repeat(16)}-01`,
        },
        body: message.body as string,
      };
    });
    const observer = await subscriber();
    const running = await broker([
      brokerObject('default'),
      triggerObject('pings', replier.url, { filter: { attributes: { type: 'com.example.ping' } } }),
      triggerObject('pongs', observer.url, { filter: { attributes: { type: 'com.example.pong' } } }),
    ]);
    await postEvent(running.ingressUrl('test', 'default'), ping(), 'binary', {
      traceparent: `00-${deliveredTrace}-b7ad6b7169203331-01`,
    });
    const [received] = await observer.waitForCount(1);
    expect(String(received!.headers.traceparent).split('-')[1]).toBe(deliveredTrace);
    expect(received!.headers['ce-traceparent']).toBe(extension);
  });

  it('routes a structured-mode reply too', async () => {
    const replier = await subscriber(() => {
      const message = HTTP.structured(
        new CloudEvent({ type: 'com.example.pong', source: '/replier', data: 'x' }),
      );
      return {
        status: 200,
        headers: message.headers as Record<string, string>,
        body: message.body as string,
      };
    });
    const observer = await subscriber();
    const running = await broker([
      brokerObject('default'),
      triggerObject('pings', replier.url, { filters: [{ exact: { type: 'com.example.ping' } }] }),
      triggerObject('pongs', observer.url, { filters: [{ exact: { type: 'com.example.pong' } }] }),
    ]);
    await postEvent(running.ingressUrl('test', 'default'), ping());
    const [received] = await observer.waitForCount(1);
    expect(received!.event.type).toBe('com.example.pong');
  });

  it('stops a reply loop when the TTL runs out and reports the drop', async () => {
    // Replies with the same type: without the TTL this would loop for ever.
    const looper = await subscriber((request) => {
      const message = HTTP.binary(
        new CloudEvent({ type: 'com.example.ping', source: '/looper', data: { hop: request.event.id } }),
      );
      return {
        status: 200,
        headers: message.headers as Record<string, string>,
        body: message.body as string,
      };
    });
    const records: DeliveryRecord[] = [];
    const running = await broker([brokerObject('default'), triggerObject('loop', looper.url)], records);
    // TTL 5 on entry → 4; each reply re-enters with the TTL it had → 3, 2, 1, then 0 is refused.
    await postEvent(running.ingressUrl('test', 'default'), ping({ knativebrokerttl: '5' }));
    await waitFor(() => records.some((r) => r.outcome === 'dropped'));
    await waitFor(() => running.inFlight() === 0);
    expect(looper.received).toHaveLength(4);
    const dropped = records.filter((r) => r.outcome === 'dropped');
    expect(dropped).toHaveLength(1);
    expect(dropped[0]!.status).toBe(400);
    expect(dropped[0]!.reason).toMatch(/TTL exhausted/);
  });

  it('ends a delivery on 2xx with an empty body (no reply)', async () => {
    const quiet = await subscriber(() => ({ status: 204 }));
    const records: DeliveryRecord[] = [];
    const running = await broker([brokerObject('default'), triggerObject('t', quiet.url)], records);
    await postEvent(running.ingressUrl('test', 'default'), ping());
    await waitFor(() => records.length === 1);
    await waitFor(() => running.inFlight() === 0);
    expect(records[0]).toEqual(
      expect.objectContaining({ outcome: 'delivered', status: 204, replied: false }),
    );
    expect(quiet.received).toHaveLength(1);
  });

  it('treats a 2xx body that is not a CloudEvent as 502: retried, then dead-lettered with the body', async () => {
    const chatty = await subscriber(() => ({
      status: 200,
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    }));
    const deadLetters = await subscriber();
    const records: DeliveryRecord[] = [];
    const running = await broker(
      [
        brokerObject('default'),
        triggerObject('t', chatty.url, { delivery: { retry: 2, deadLetterSink: { uri: deadLetters.url } } }),
      ],
      records,
    );
    await postEvent(running.ingressUrl('test', 'default'), ping());
    const [dead] = await deadLetters.waitForCount(1);
    // The record of the dead-lettering is written after the sink answers: wait for it too.
    await waitFor(() => records.length === 3);
    expect(chatty.received).toHaveLength(3);
    expect(records.map((r) => r.outcome)).toEqual(['retry', 'retry', 'dead-lettered']);
    expect(dead!.headers['ce-knativeerrorcode']).toBe('502');
    expect(Buffer.from(dead!.headers['ce-knativeerrordata'] as string, 'base64').toString()).toBe('hello');
  });

  it('treats a malformed CloudEvent reply as 502', async () => {
    const broken = await subscriber(() => ({
      status: 200,
      headers: { 'ce-specversion': '1.0', 'ce-type': 'x', 'content-type': 'application/json' },
      body: '{}',
    }));
    const records: DeliveryRecord[] = [];
    const running = await broker(
      [brokerObject('default'), triggerObject('t', broken.url, { delivery: { retry: 1 } })],
      records,
    );
    await postEvent(running.ingressUrl('test', 'default'), ping());
    await waitFor(() => records.length === 2);
    expect(records.map((r) => r.outcome)).toEqual(['retry', 'dropped']);
    expect(records[1]!.reason).toMatch(/502/);
  });
});

describe('filters through the broker', () => {
  it('delivers each event only to the triggers whose filter it passes, for every dialect', async () => {
    const names = [
      'attributes',
      'any-present',
      'exact',
      'prefix',
      'suffix',
      'all',
      'any',
      'not',
      'empty',
      'none',
    ];
    const subscribers = Object.fromEntries(
      await Promise.all(names.map(async (name) => [name, await subscriber()] as const)),
    );
    const url = (name: string) => subscribers[name]!.url;
    const running = await broker([
      brokerObject('default'),
      triggerObject('attributes', url('attributes'), {
        filter: { attributes: { type: 'org.example.a', source: '/src/1' } },
      }),
      triggerObject('any-present', url('any-present'), { filter: { attributes: { tenant: '' } } }),
      triggerObject('exact', url('exact'), { filters: [{ exact: { type: 'org.example.a' } }] }),
      triggerObject('prefix', url('prefix'), { filters: [{ prefix: { type: 'org.example.' } }] }),
      triggerObject('suffix', url('suffix'), { filters: [{ suffix: { source: '/2' } }] }),
      triggerObject('all', url('all'), {
        filters: [{ all: [{ prefix: { type: 'org.' } }, { exact: { tenant: 'lab1' } }] }],
      }),
      triggerObject('any', url('any'), {
        filters: [{ any: [{ exact: { type: 'org.example.b' } }, { suffix: { source: '/1' } }] }],
      }),
      triggerObject('not', url('not'), { filters: [{ not: { prefix: { type: 'org.example.' } } }] }),
      // `filters: []` falls back to `filter`; neither present passes everything.
      triggerObject('empty', url('empty'), {
        filters: [],
        filter: { attributes: { type: 'org.example.b' } },
      }),
      triggerObject('none', url('none'), {}),
    ]);
    const events = [
      ping({ id: 'e1', type: 'org.example.a', source: '/src/1' }),
      ping({ id: 'e2', type: 'org.example.b', source: '/src/2', tenant: 'lab1' }),
      ping({ id: 'e3', type: 'com.other', source: '/src/1', tenant: 'lab2' }),
      ping({ id: 'e4', type: 'ORG.EXAMPLE.A', source: '/src/3' }),
    ];
    for (const event of events)
      expect((await postEvent(running.ingressUrl('test', 'default'), event)).status).toBe(202);
    const expected: Record<string, string[]> = {
      attributes: ['e1'],
      'any-present': ['e2', 'e3'],
      exact: ['e1'],
      prefix: ['e1', 'e2'],
      suffix: ['e2'],
      all: ['e2'],
      any: ['e1', 'e2', 'e3'],
      not: ['e3', 'e4'],
      empty: ['e2'],
      none: ['e1', 'e2', 'e3', 'e4'],
    };
    const total = Object.values(expected).reduce((sum, ids) => sum + ids.length, 0);
    await waitFor(() => names.reduce((sum, name) => sum + subscribers[name]!.received.length, 0) >= total);
    await waitFor(() => running.inFlight() === 0);
    for (const name of names) {
      const ids = subscribers[name]!.received.map((r) => r.headers['ce-id']).sort();
      expect({ trigger: name, ids }).toEqual({ trigger: name, ids: expected[name] });
    }
  });

  it('rejects CE SQL filters at load with a clear error', async () => {
    await expect(
      startBroker({
        objects: [
          brokerObject('default'),
          triggerObject('sql', 'http://127.0.0.1:1/', { filters: [{ cesql: "type = 'a'" }] }),
        ],
        resolveRef,
        log: silentLogger,
      }),
    ).rejects.toThrow(/CE SQL filters are not supported/);
  });

  it('rejects a filter element with two dialects', async () => {
    await expect(
      startBroker({
        objects: [
          brokerObject('default'),
          triggerObject('two', 'http://127.0.0.1:1/', {
            filters: [{ exact: { type: 'a' }, prefix: { type: 'b' } }],
          }),
        ],
        resolveRef,
        log: silentLogger,
      }),
    ).rejects.toThrow(/exactly one dialect/);
  });
});

describe('filter semantics (three-valued, as pkg/eventfilter)', () => {
  const event = (attributes: Record<string, string>): RawEvent => ({
    attributes: { specversion: '1.0', id: '1', source: '/s', type: 't', ...attributes },
  });

  it('a missing extension fails exact/prefix/suffix; core attributes are always present', () => {
    expect(compileTriggerFilter({ filters: [{ exact: { tenant: 'a' } }] })(event({}))).toBe('fail');
    expect(compileTriggerFilter({ filters: [{ prefix: { subject: 'a' } }] })(event({}))).toBe('fail');
    expect(() => compileTriggerFilter({ filters: [{ suffix: { subject: '' } }] })).toThrow(/non-empty/);
    expect(compileTriggerFilter({ filter: { attributes: { subject: '' } } })(event({}))).toBe('fail');
    expect(compileTriggerFilter({ filter: { attributes: { subject: '' } } })(event({ subject: 'x' }))).toBe(
      'pass',
    );
  });

  it('attribute comparison is case-sensitive', () => {
    expect(compileTriggerFilter({ filter: { attributes: { type: 'T' } } })(event({}))).toBe('fail');
  });

  it('not inverts the filter it wraps', () => {
    expect(compileTriggerFilter({ filters: [{ not: { any: [{ exact: { type: 'x' } }] } }] })(event({}))).toBe(
      'pass',
    );
    expect(compileTriggerFilter({ filters: [{ not: { exact: { type: 't' } } }] })(event({}))).toBe('fail');
  });

  it('empty filter passes everything', () => {
    expect(compileTriggerFilter({})(event({}))).toBe('none');
    expect(compileTriggerFilter({ filter: {} })(event({}))).toBe('none');
    expect(compileTriggerFilter({ filter: { attributes: {} } })(event({}))).toBe('pass');
  });
});

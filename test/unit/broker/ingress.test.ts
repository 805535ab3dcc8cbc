import { CloudEvent } from 'cloudevents';
import { silentLogger } from '../../../shared/log.js';
import { startBroker, type RunningBroker } from '../../../local/broker/index.js';
import { maxIngressBodyBytes } from '../../../local/broker/ingress.js';
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

describe('broker ingress', () => {
  let subscriber: RecordingSubscriber;
  let broker: RunningBroker;

  beforeEach(async () => {
    subscriber = await startSubscriber();
    broker = await startBroker({
      objects: [brokerObject('default'), triggerObject('all', subscriber.url)],
      resolveRef,
      log: silentLogger,
    });
  });
  afterEach(async () => {
    await broker.close();
    await subscriber.close();
  });

  const event = (extra: Record<string, unknown> = {}) =>
    new CloudEvent({
      type: 'com.example.ping',
      source: '/test',
      subject: 'thing/1',
      data: { n: 1 },
      ...extra,
    });

  it('answers OPTIONS with 200 and Allow: POST, OPTIONS', async () => {
    const response = await fetch(broker.ingressUrl('test', 'default'), { method: 'OPTIONS' });
    expect(response.status).toBe(200);
    expect(response.headers.get('allow')).toBe('POST, OPTIONS');
  });

  it.each(['GET', 'PUT', 'DELETE', 'PATCH'])('answers %s with 405', async (method) => {
    const response = await fetch(broker.ingressUrl('test', 'default'), { method });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST, OPTIONS');
  });

  it('answers POST / with 404 and malformed paths with 400', async () => {
    expect((await postEvent(`${broker.url}/`, event())).status).toBe(404);
    expect((await postEvent(`${broker.url}/test`, event())).status).toBe(400);
    expect((await postEvent(`${broker.url}/test/default/extra`, event())).status).toBe(400);
  });

  it('accepts a trailing slash on /<namespace>/<broker>/', async () => {
    expect((await postEvent(`${broker.ingressUrl('test', 'default')}/`, event())).status).toBe(202);
  });

  it('answers 404 for an unknown broker or namespace, counted without the path in labels', async () => {
    expect((await postEvent(broker.ingressUrl('test', 'other'), event())).status).toBe(404);
    expect((await postEvent(broker.ingressUrl('elsewhere', 'default'), event())).status).toBe(404);
    for (let i = 0; i < 20; i++)
      expect((await postEvent(broker.ingressUrl(`ns-${i}`, `b-${i}`), event())).status).toBe(404);
    const text = await (await fetch(`${broker.url}/metrics`)).text();
    // One series for every unknown path: a producer's paths must not grow the label set.
    expect(text).toMatch(
      /^kn_eventing_broker_ingress_events_total\{kn_broker_namespace="",kn_broker_name="",cloudevents_type="",http_response_status_code="404"\} (\d+)$/m,
    );
    expect(text).not.toContain('elsewhere');
    expect(text).not.toContain('ns-7');
  });

  it('answers 413 for a body over the limit and delivers nothing, then takes the next event', async () => {
    const url = broker.ingressUrl('test', 'default');
    const tooLarge = await fetch(url, {
      method: 'POST',
      headers: {
        'ce-specversion': '1.0',
        'ce-id': 'big-1',
        'ce-type': 'com.example.ping',
        'ce-source': '/test',
        'content-type': 'application/octet-stream',
      },
      body: Buffer.alloc(maxIngressBodyBytes + 1, 0x61),
    });
    expect(tooLarge.status).toBe(413);
    expect((await postEvent(url, event())).status).toBe(202);
    await waitFor(() => subscriber.received.length === 1);
    expect(subscriber.received.map((r) => r.headers['ce-id'])).not.toContain('big-1');
  });

  it('keeps counting deliveries when a delivery listener throws', async () => {
    broker.on('delivery', () => {
      throw new Error('listener bug');
    });
    expect((await postEvent(broker.ingressUrl('test', 'default'), event())).status).toBe(202);
    await waitFor(() => subscriber.received.length === 1);
    // The delivery's promise rejected; it must still leave the in-flight count, or close() waits.
    await waitFor(() => broker.inFlight() === 0);
  });

  it('answers 400 for requests that are not valid CloudEvents', async () => {
    const url = broker.ingressUrl('test', 'default');
    const plain = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(plain.status).toBe(400);
    const noId = await fetch(url, {
      method: 'POST',
      headers: {
        'ce-specversion': '1.0',
        'ce-type': 't',
        'ce-source': '/s',
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(noId.status).toBe(400);
    const badStructured = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents+json' },
      body: JSON.stringify({ specversion: '1.0', id: '1', source: '/s' }),
    });
    expect(badStructured.status).toBe(400);
    const badTime = await fetch(url, {
      method: 'POST',
      headers: {
        'ce-specversion': '1.0',
        'ce-id': '1',
        'ce-type': 't',
        'ce-source': '/s',
        'ce-time': 'yesterday',
      },
    });
    expect(badTime.status).toBe(400);
    expect(subscriber.received).toHaveLength(0);
  });

  it('accepts binary mode with 202 and delivers the same event in binary mode', async () => {
    const sent = event({ myext: 'value with spaces é' });
    expect((await postEvent(broker.ingressUrl('test', 'default'), sent)).status).toBe(202);
    const [received] = await subscriber.waitForCount(1);
    expect(received!.headers['ce-id']).toBe(sent.id);
    expect(received!.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(received!.event.type).toBe('com.example.ping');
    expect(received!.event.source).toBe('/test');
    expect(received!.event.subject).toBe('thing/1');
    expect(received!.event.data).toEqual({ n: 1 });
    expect(received!.headers['ce-myext']).toBe('value%20with%20spaces%20%C3%A9');
  });

  it('accepts structured mode and delivers it in binary mode with the same attributes and data', async () => {
    const sent = event({ datacontenttype: 'application/json', tenant: 'lab1' });
    expect((await postEvent(broker.ingressUrl('test', 'default'), sent, 'structured')).status).toBe(202);
    const [received] = await subscriber.waitForCount(1);
    expect(received!.headers['ce-specversion']).toBe('1.0');
    expect(received!.headers['ce-id']).toBe(sent.id);
    expect(received!.headers['ce-tenant']).toBe('lab1');
    expect(JSON.parse(received!.body.toString('utf8'))).toEqual({ n: 1 });
  });

  it('adds knativearrivaltime (RFC 3339) and never shows the TTL to the subscriber', async () => {
    const before = Date.now();
    await postEvent(broker.ingressUrl('test', 'default'), event());
    const [received] = await subscriber.waitForCount(1);
    const arrival = received!.headers['ce-knativearrivaltime'] as string;
    expect(arrival).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(Date.parse(arrival)).toBeGreaterThanOrEqual(before - 1000);
    expect(received!.headers['ce-knativebrokerttl']).toBeUndefined();
  });

  it('refuses with 400 an event whose TTL is exhausted on entry', async () => {
    const url = broker.ingressUrl('test', 'default');
    expect((await postEvent(url, event({ knativebrokerttl: '1' }))).status).toBe(400);
    expect((await postEvent(url, event({ knativebrokerttl: '0' }))).status).toBe(400);
    expect((await postEvent(url, event({ knativebrokerttl: '2' }))).status).toBe(202);
    await subscriber.waitForCount(1);
    expect(subscriber.received).toHaveLength(1);
  });

  it('serves Knative-style metrics on GET /metrics, without event ids', async () => {
    const sent = event();
    await postEvent(broker.ingressUrl('test', 'default'), sent);
    await waitFor(() => subscriber.received.length === 1);
    await waitFor(() => broker.inFlight() === 0);
    const response = await fetch(`${broker.url}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toMatch(
      /kn_eventing_dispatch_duration_seconds_count\{[^}]*messaging_destination_name="trigger:all\.test"[^}]*cloudevents_type="com\.example\.ping"[^}]*http_response_status_code="202"[^}]*\} 1/,
    );
    expect(text).toContain('kn_eventing_broker_ingress_events_total');
    expect(text).not.toContain(sent.id);
  });
});

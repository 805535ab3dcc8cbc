import http from 'node:http';
import { connect } from 'node:net';
import { CloudEvent, HTTP } from 'cloudevents';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { BpaError } from '../../../shared/errors.js';
import { parseHttpEvent } from '../../../shared/cloudevents/message.js';
import { startFunctionServer, type RunningFunctionServer } from '../../../shared/server/function-server.js';
import { Tracing } from '../../../shared/telemetry/tracing.js';
import {
  badReplyType,
  capturingLogger,
  createGate,
  failType,
  greetType,
  silentType,
  slowType,
  testFunction,
  untouchableKubeConfig,
  type TestFunctionProbe,
} from './test-function.js';

const incomingTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const incomingSpanId = '00f067aa0ba902b7';
const incomingTraceparent = `00-${incomingTraceId}-${incomingSpanId}-01`;

function binaryHeaders(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const headers: Record<string, string | undefined> = {
    'ce-specversion': '1.0',
    'ce-id': 'event-1',
    'ce-source': '/test',
    'ce-type': greetType,
    'ce-subject': 'namespaces/lab/provisionings/cluster-a',
    'content-type': 'application/json',
    ...overrides,
  };
  return Object.fromEntries(Object.entries(headers).filter(([, value]) => value !== undefined)) as Record<
    string,
    string
  >;
}

async function post(url: string, headers: Record<string, string>, body: string | Uint8Array) {
  const response = await fetch(url, { method: 'POST', headers, body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text };
}

function headerRecord(headers: Headers): Record<string, string> {
  const record: Record<string, string> = {};
  headers.forEach((value, name) => (record[name] = value));
  return record;
}

async function expectHealthy(server: RunningFunctionServer) {
  const liveness = await fetch(`${server.url}/health/liveness`);
  expect(liveness.status).toBe(200);
  expect(await liveness.json()).toEqual({ status: 'alive' });
  const good = await post(
    server.url,
    binaryHeaders({ 'ce-id': 'after-bad' }),
    JSON.stringify({ name: 'again' }),
  );
  expect(good.status).toBe(200);
}

describe('function server', () => {
  const probe: TestFunctionProbe = { contexts: [], events: [] };
  const spans = new InMemorySpanExporter();
  const logs = capturingLogger();
  let server: RunningFunctionServer;

  beforeAll(async () => {
    const tracing = await Tracing.create({
      serviceName: 'test-fn',
      env: {},
      spanProcessors: [new SimpleSpanProcessor(spans)],
    });
    server = await startFunctionServer({
      definition: testFunction(probe),
      host: '127.0.0.1',
      port: 0,
      kubeConfig: untouchableKubeConfig,
      env: { GREETING: 'hi', REPEAT: '2' },
      log: logs.log,
      tracing,
      processMetrics: false,
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('answers a binary-mode event with the reply in binary mode and HTTP 200', async () => {
    const response = await post(server.url, binaryHeaders(), JSON.stringify({ name: 'Ada' }));
    expect(response.status).toBe(200);
    const headers = headerRecord(response.headers);
    expect(headers['ce-type']).toBe('test.greeted');
    expect(headers['ce-specversion']).toBe('1.0');
    expect(headers['ce-subject']).toBe('namespaces/lab/provisionings/cluster-a');
    const parsed = parseHttpEvent(headers, Buffer.from(response.text));
    if (!parsed.ok) throw new Error(parsed.message);
    expect(parsed.mode).toBe('binary');
    expect(parsed.event.validate()).toBe(true);
    // config from env: GREETING=hi repeated REPEAT=2 times
    expect(parsed.event.data).toEqual({ greeting: 'hihi Ada' });
  });

  it('accepts a structured-mode event', async () => {
    const event = new CloudEvent({
      type: greetType,
      source: '/test',
      id: 'structured-1',
      data: { name: 'Bo' },
    });
    const message = HTTP.structured(event);
    const response = await post(
      server.url,
      { 'content-type': 'application/cloudevents+json; charset=utf-8' },
      String(message.body),
    );
    expect(response.status).toBe(200);
    expect(JSON.parse(response.text)).toEqual({ greeting: 'hihi Bo' });
    expect(probe.events.at(-1)?.id).toBe('structured-1');
  });

  it('accepts JSON data whose content type has parameters', async () => {
    const response = await post(
      server.url,
      binaryHeaders({ 'content-type': 'application/json; charset=utf-8' }),
      JSON.stringify({ name: 'Cy' }),
    );
    expect(response.status).toBe(200);
    expect(probe.events.at(-1)?.data).toEqual({ name: 'Cy' });
  });

  it('answers 204 with an empty body when the handler returns nothing', async () => {
    const response = await post(server.url, binaryHeaders({ 'ce-type': silentType }), '{}');
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
  });

  it('gives the handler a context: bound logger, config, kubeConfig, metrics, traceparent', async () => {
    await post(
      server.url,
      binaryHeaders({ 'ce-id': 'ctx-1', traceparent: incomingTraceparent }),
      JSON.stringify({ name: 'Di' }),
    );
    const context = probe.contexts.at(-1)!;
    expect(context.config).toEqual({ GREETING: 'hi', REPEAT: 2 });
    expect(context.kubeConfig).toBe(untouchableKubeConfig);
    expect(context.traceparent).toBe(incomingTraceparent);
    expect(context.metrics).toBe(server.metrics);
    const handling = logs.lines.find((line) => line.msg === 'handling' && line.ce_id === 'ctx-1');
    expect(handling).toMatchObject({
      function: 'test-fn',
      ce_type: greetType,
      ce_subject: 'namespaces/lab/provisionings/cluster-a',
      namespace: 'lab',
      name: 'cluster-a',
      trace_id: incomingTraceId,
    });
    const requestLine = logs.lines.find((line) => line.msg === 'event' && line.ce_id === 'ctx-1');
    expect(requestLine).toMatchObject({ status: 200, outcome: 'reply', trace_id: incomingTraceId });
    expect(typeof requestLine?.duration_ms).toBe('number');
  });

  describe('malformed or invalid events: 400 with a JSON error, server still healthy', () => {
    const cases: [string, () => Promise<{ status: number; text: string }>, string, RegExp?][] = [
      [
        'binary event without id',
        () => post(server.url, binaryHeaders({ 'ce-id': undefined }), '{"name":"x"}'),
        'MissingAttribute',
        /'id'/,
      ],
      [
        'binary event without source',
        () => post(server.url, binaryHeaders({ 'ce-source': undefined }), '{"name":"x"}'),
        'MissingAttribute',
        /'source'/,
      ],
      [
        'binary event without specversion',
        () => post(server.url, binaryHeaders({ 'ce-specversion': undefined }), '{"name":"x"}'),
        'MissingAttribute',
        /'specversion'/,
      ],
      [
        'specversion 0.3',
        () => post(server.url, binaryHeaders({ 'ce-specversion': '0.3' }), '{"name":"x"}'),
        'UnsupportedSpecVersion',
      ],
      [
        'structured event without id',
        () =>
          post(
            server.url,
            { 'content-type': 'application/cloudevents+json' },
            JSON.stringify({ specversion: '1.0', type: greetType, source: '/t', data: { name: 'x' } }),
          ),
        'MissingAttribute',
        /'id'/,
      ],
      [
        'a type the function does not accept',
        () => post(server.url, binaryHeaders({ 'ce-type': 'org.example.other' }), '{}'),
        'UnacceptedEventType',
        /org\.example\.other/,
      ],
      [
        'data failing the schema',
        () => post(server.url, binaryHeaders(), JSON.stringify({ name: 7 })),
        'InvalidEventData',
        /name:/,
      ],
      [
        'data with a missing field',
        () => post(server.url, binaryHeaders(), JSON.stringify({ language: 'fr' })),
        'InvalidEventData',
        /name/,
      ],
      ['data that is not JSON', () => post(server.url, binaryHeaders(), '{"name": '), 'DataNotJson'],
      [
        'plain text under a JSON content type',
        () => post(server.url, binaryHeaders(), 'hello there'),
        'DataNotJson',
      ],
      [
        'a structured body that is not JSON',
        () => post(server.url, { 'content-type': 'application/cloudevents+json' }, '{not json'),
        'MalformedEvent',
      ],
      [
        'a structured body that is an array',
        () => post(server.url, { 'content-type': 'application/cloudevents+json' }, '[1,2]'),
        'MalformedEvent',
      ],
      [
        'a batch',
        () => post(server.url, { 'content-type': 'application/cloudevents-batch+json' }, '[]'),
        'BatchNotSupported',
      ],
      [
        'no CloudEvent at all',
        () => post(server.url, { 'content-type': 'application/json' }, '{"name":"x"}'),
        'NotACloudEvent',
      ],
      [
        'garbage bytes',
        () =>
          post(
            server.url,
            { 'content-type': 'application/octet-stream' },
            new Uint8Array([0, 255, 1, 254, 13, 10]),
          ),
        'NotACloudEvent',
      ],
      [
        'garbage bytes as JSON data',
        () => post(server.url, binaryHeaders(), new Uint8Array([0xff, 0xfe, 0x00, 0x7b])),
        'DataNotJson',
      ],
      [
        'an invalid source',
        () => post(server.url, binaryHeaders({ 'ce-source': 'not a uri' }), '{"name":"x"}'),
        'InvalidEvent',
      ],
      [
        'an invalid extension name',
        () => post(server.url, binaryHeaders({ 'ce-bad_name': 'x' }), '{"name":"x"}'),
        'InvalidEvent',
      ],
      [
        'a body over 1 MiB',
        () => post(server.url, binaryHeaders(), JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) })),
        'BodyTooLarge',
      ],
    ];
    const rows = cases.map(([label, send, reason, messagePattern]) => ({
      label,
      send,
      reason,
      messagePattern,
    }));
    it.each(rows)('$label', async ({ send, reason, messagePattern }) => {
      const response = await send();
      expect(response.status).toBe(400);
      const body = JSON.parse(response.text) as { error: { reason: string; message: string } };
      expect(body.error.reason).toBe(reason);
      expect(body.error.message.length).toBeGreaterThan(0);
      if (messagePattern) expect(body.error.message).toMatch(messagePattern);
      await expectHealthy(server);
    });

    it('bytes that are not HTTP get a 400 and the server keeps serving', async () => {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(server.port, '127.0.0.1');
        let received = '';
        socket.on('data', (chunk) => (received += chunk.toString()));
        socket.on('end', () => resolve(received));
        socket.on('error', reject);
        socket.write(
          Buffer.from([
            0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x0a, 0x0d, 0x0a, 0x0d, 0x0a,
          ]),
        );
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('"reason":"BadRequest"');
      await expectHealthy(server);
    });
  });

  describe('errors thrown by the handler', () => {
    it.each([
      ['invalid', 400, 'BadInput'],
      ['transient', 503, 'ApiUnavailable'],
      ['resolution', 422, 'HostNotFound'],
      ['internal', 500, 'Bug'],
      ['plain', 500, 'InternalError'],
      // A namespace the event leads to is gone: 422, not 404, which Knative would retry forever.
      ['gone', 422, 'KubernetesApiError'],
      // A conflicting update is a race: 409, which Knative retries.
      ['conflict', 409, 'KubernetesConflict'],
    ])('a %s error answers %i with its reason', async (kind, status, reason) => {
      const response = await post(
        server.url,
        binaryHeaders({ 'ce-type': failType }),
        JSON.stringify({ kind }),
      );
      expect(response.status).toBe(status);
      expect(response.headers.get('content-type')).toBe('application/json');
      const body = JSON.parse(response.text) as { error: { reason: string; message: string } };
      expect(body.error.reason).toBe(reason);
      // One line per request: warn for what the event is to blame for, error for a failure here.
      const line = logs.lines.findLast((l) => l['msg'] === 'event' && l['reason'] === reason);
      expect(line?.['level']).toBe(status >= 500 ? 'error' : 'warn');
      await expectHealthy(server);
    });

    it('a reply that is not a valid CloudEvent is a 500', async () => {
      const response = await post(server.url, binaryHeaders({ 'ce-type': badReplyType }), '{}');
      expect(response.status).toBe(500);
      expect(JSON.parse(response.text).error.reason).toBe('InvalidReply');
    });
  });

  describe('tracing', () => {
    it('continues the incoming trace on the reply: same trace id, new span id, header and extension', async () => {
      const response = await post(
        server.url,
        binaryHeaders({ 'ce-id': 'traced-1', traceparent: incomingTraceparent, tracestate: 'vendor=abc' }),
        JSON.stringify({ name: 'Ed' }),
      );
      expect(response.status).toBe(200);
      const header = response.headers.get('traceparent');
      const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(header ?? '');
      expect(match).not.toBeNull();
      expect(match![1]).toBe(incomingTraceId);
      expect(match![2]).not.toBe(incomingSpanId);
      expect(response.headers.get('ce-traceparent')).toBe(header);
      expect(response.headers.get('tracestate')).toBe('vendor=abc');
      const span = spans.getFinishedSpans().find((s) => s.attributes['cloudevents.event_id'] === 'traced-1');
      expect(span?.spanContext().traceId).toBe(incomingTraceId);
      expect(span?.parentSpanContext?.spanId).toBe(incomingSpanId);
      expect(span?.spanContext().spanId).toBe(match![2]);
    });

    it('continues the distributed-tracing extension of a structured event', async () => {
      const event = new CloudEvent({
        type: greetType,
        source: '/test',
        id: 'traced-2',
        traceparent: incomingTraceparent,
        data: { name: 'Flo' },
      });
      const response = await post(
        server.url,
        { 'content-type': 'application/cloudevents+json' },
        String(HTTP.structured(event).body),
      );
      expect(response.status).toBe(200);
      expect(response.headers.get('traceparent')).toMatch(new RegExp(`^00-${incomingTraceId}-`));
    });

    it('continues the event’s distributed-tracing extension over a traceparent header of another trace', async () => {
      // On Knative the header is the broker's: a reply travels in the trace of the delivery
      // that produced it, so after kud-job-launch continued a recorded trace, cluster.ready's
      // header is the Job update's trace and only its extension is the Provisioning's.
      const brokerTraceparent = `00-${'b'.repeat(32)}-${'c'.repeat(16)}-01`;
      const response = await post(
        server.url,
        binaryHeaders({
          'ce-id': 'traced-3',
          'ce-traceparent': incomingTraceparent,
          traceparent: brokerTraceparent,
        }),
        JSON.stringify({ name: 'Hal' }),
      );
      expect(response.status).toBe(200);
      expect(response.headers.get('traceparent')).toMatch(new RegExp(`^00-${incomingTraceId}-`));
      expect(response.headers.get('ce-traceparent')).toBe(response.headers.get('traceparent'));
      const span = spans.getFinishedSpans().find((s) => s.attributes['cloudevents.event_id'] === 'traced-3');
      expect(span?.parentSpanContext?.spanId).toBe(incomingSpanId);
      const line = logs.lines.find((l) => l.msg === 'event' && l.ce_id === 'traced-3');
      expect(line?.trace_id).toBe(incomingTraceId);
    });

    it('falls back to the traceparent header when the event has no valid extension', async () => {
      const response = await post(
        server.url,
        binaryHeaders({
          'ce-id': 'traced-4',
          'ce-traceparent': 'not-a-traceparent',
          traceparent: incomingTraceparent,
        }),
        JSON.stringify({ name: 'Ida' }),
      );
      expect(response.status).toBe(200);
      expect(response.headers.get('traceparent')).toMatch(new RegExp(`^00-${incomingTraceId}-`));
    });

    it('starts a new trace when there is none and still logs its id', async () => {
      const response = await post(
        server.url,
        binaryHeaders({ 'ce-id': 'untraced' }),
        JSON.stringify({ name: 'Gil' }),
      );
      const traceId = /^00-([0-9a-f]{32})-/.exec(response.headers.get('traceparent') ?? '')?.[1];
      expect(traceId).toBeDefined();
      const line = logs.lines.find((l) => l.msg === 'event' && l.ce_id === 'untraced');
      expect(line?.trace_id).toBe(traceId);
    });

    it('puts the trace on rejections too', async () => {
      const response = await post(
        server.url,
        binaryHeaders({ 'ce-id': undefined, traceparent: incomingTraceparent }),
        '{}',
      );
      expect(response.status).toBe(400);
      expect(response.headers.get('traceparent')).toMatch(new RegExp(`^00-${incomingTraceId}-`));
    });
  });

  it('exposes runtime and domain metrics with their labels', async () => {
    await post(server.url, binaryHeaders(), JSON.stringify({ name: 'Hu', language: 'fr' }));
    await post(server.url, binaryHeaders({ 'ce-type': silentType }), '{}');
    await post(server.url, binaryHeaders({ 'ce-type': failType }), JSON.stringify({ kind: 'transient' }));
    await post(server.url, binaryHeaders({ 'ce-type': 'org.example.other' }), '{}');
    const response = await fetch(`${server.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await response.text();
    const sample = (name: string, labels: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
      return line === undefined ? undefined : Number(line.split(' ').at(-1));
    };
    expect(
      sample('faas_invocations', `function="test-fn",event_type="${greetType}",outcome="reply"`),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample('faas_invocations', `function="test-fn",event_type="${silentType}",outcome="ok"`),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample('faas_invocations', `function="test-fn",event_type="${failType}",outcome="error"`),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample('faas_invocations', `function="test-fn",event_type="unknown",outcome="invalid"`),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample('faas_errors', `function="test-fn",event_type="${failType}",outcome="error"`),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample('faas_errors', `function="test-fn",event_type="${greetType}",outcome="reply"`),
    ).toBeUndefined();
    expect(
      sample('faas_execution_latency_count', `function="test-fn",event_type="${greetType}",outcome="reply"`),
    ).toBeGreaterThanOrEqual(1);
    expect(sample('faas_cold_start_latency_count', 'function="test-fn"')).toBe(1);
    expect(sample('test_greetings_total', 'language="fr"')).toBeGreaterThanOrEqual(1);
    // Untrusted event types never become label values.
    expect(text).not.toContain('org.example.other');
  });

  describe('routes', () => {
    it('serves readiness and liveness as JSON', async () => {
      const readiness = await fetch(`${server.url}/health/readiness`);
      expect(readiness.status).toBe(200);
      expect(await readiness.json()).toEqual({ status: 'ready' });
    });
    it('answers 404 with a JSON error for other paths', async () => {
      const response = await fetch(`${server.url}/nope`);
      expect(response.status).toBe(404);
      expect(((await response.json()) as { error: { reason: string } }).error.reason).toBe('NotFound');
    });
    it('answers 405 with Allow for other methods', async () => {
      const response = await fetch(server.url, { method: 'GET' });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST, OPTIONS');
      const onHealth = await fetch(`${server.url}/health/liveness`, { method: 'POST', body: '' });
      expect(onHealth.status).toBe(405);
      expect(onHealth.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    });
    it('answers OPTIONS, including the CloudEvents webhook handshake', async () => {
      const response = await fetch(server.url, {
        method: 'OPTIONS',
        headers: { 'webhook-request-origin': 'broker.example' },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('allow')).toBe('POST, OPTIONS');
      expect(response.headers.get('webhook-allowed-origin')).toBe('broker.example');
    });
  });
});

/** A function server on a free loopback port with no tracing and a log nobody reads. */
const startQuietServer = (probe: TestFunctionProbe, shutdownGraceMs?: number) =>
  startFunctionServer({
    definition: testFunction(probe),
    host: '127.0.0.1',
    port: 0,
    kubeConfig: untouchableKubeConfig,
    env: {},
    tracing: false,
    ...(shutdownGraceMs !== undefined ? { shutdownGraceMs } : {}),
    log: capturingLogger().log,
  });

describe('function server start-up and shutdown', () => {
  it('refuses to start with invalid config, naming the variable', async () => {
    const probe: TestFunctionProbe = { contexts: [], events: [] };
    const start = startFunctionServer({
      definition: testFunction(probe),
      host: '127.0.0.1',
      port: 0,
      kubeConfig: untouchableKubeConfig,
      env: { REPEAT: 'seven' },
      tracing: false,
      log: capturingLogger().log,
    });
    await expect(start).rejects.toBeInstanceOf(BpaError);
    await expect(start).rejects.toMatchObject({
      reason: 'InvalidConfig',
      message: expect.stringMatching(/^Invalid configuration for test-fn: REPEAT: /),
    });
  });

  it('lets an in-flight request finish on close, then stops accepting connections', async () => {
    const gate = createGate();
    const probe: TestFunctionProbe = { contexts: [], events: [], slowGate: gate };
    const server = await startQuietServer(probe);
    const inFlight = post(server.url, binaryHeaders({ 'ce-type': slowType }), '{}');
    await gate.entered;
    let closed = false;
    const closing = server.close().then(() => (closed = true));
    // Draining: the request is still running and close() has not resolved.
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    gate.open();
    const response = await inFlight;
    expect(response.status).toBe(204);
    await closing;
    expect(closed).toBe(true);
    await expect(fetch(`${server.url}/health/liveness`)).rejects.toThrow();
  });

  it("keeps an idle keep-alive connection open past Node's 5 s default, and still closes it on close()", async () => {
    // A sender's pool reuses an idle connection (the embedded broker's agent keeps them with no
    // idle limit of its own): a server that had closed it meanwhile races that POST, which is
    // reset. Here the second request goes out 6 s after the first, on the same connection.
    const probe: TestFunctionProbe = { contexts: [], events: [] };
    const server = await startQuietServer(probe);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const send = (id: string) =>
      new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
        const body = JSON.stringify({ name: id });
        const request = http.request(
          server.url,
          {
            method: 'POST',
            agent,
            headers: { ...binaryHeaders({ 'ce-id': id }), 'content-length': Buffer.byteLength(body) },
          },
          (response) => {
            response.resume();
            response.on('end', () =>
              resolve({ status: response.statusCode ?? 0, reused: request.reusedSocket }),
            );
          },
        );
        request.on('error', reject);
        request.end(body);
      });
    try {
      expect(await send('first')).toEqual({ status: 200, reused: false });
      await new Promise((resolve) => setTimeout(resolve, 6000));
      expect(await send('after-idle')).toEqual({ status: 200, reused: true });
      // close() ends the idle connection instead of waiting 72 s for it (the test's 20 s would end first).
      const idle = Object.values(agent.freeSockets).flatMap((sockets) => sockets ?? []);
      expect(idle).toHaveLength(1);
      const idleClosed = new Promise((resolve) => idle[0]!.once('close', resolve));
      await server.close();
      await idleClosed;
    } finally {
      agent.destroy();
      await server.close();
    }
  }, 20_000);

  it('cuts connections that outlive the grace period', async () => {
    const gate = createGate();
    const probe: TestFunctionProbe = { contexts: [], events: [], slowGate: gate };
    const server = await startQuietServer(probe, 50);
    const inFlight = post(server.url, binaryHeaders({ 'ce-type': slowType }), '{}');
    await gate.entered;
    await server.close();
    await expect(inFlight).rejects.toThrow();
    gate.open();
  });
});

/**
 * Where spans go: the OTLP/HTTP traces URL read from the standard variables, and the real OTLP
 * exporter (@opentelemetry/exporter-trace-otlp-http) posting a span to it. The receiver is a
 * plain HTTP server on loopback that records the paths it is sent (an imitation of a collector:
 * only the request line is judged, not the protobuf body).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Tracing, otlpTracesUrl } from '../../../shared/telemetry/tracing.js';

describe('otlpTracesUrl', () => {
  it('appends /v1/traces to a base endpoint, with or without a trailing slash', () => {
    expect(otlpTracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(otlpTracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toBe(
      'http://collector:4318/v1/traces',
    );
  });

  it("takes a base that already ends in /v1/traces as it is (Knative's tracing-endpoint form)", () => {
    expect(
      otlpTracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318/v1/traces' }),
    ).toBe('http://otel-collector.observability:4318/v1/traces');
    expect(otlpTracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/v1/traces/' })).toBe(
      'http://collector:4318/v1/traces',
    );
  });

  it('prefers the traces endpoint, and gives none when neither is set', () => {
    expect(
      otlpTracesUrl({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/custom',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      }),
    ).toBe('http://traces:4318/custom');
    expect(otlpTracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeUndefined();
    expect(otlpTracesUrl({})).toBeUndefined();
  });
});

describe('the OTLP exporter with a copied Knative tracing endpoint', () => {
  let server: Server;
  const paths: string[] = [];
  let base: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      paths.push(request.url ?? '');
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('posts the span to /v1/traces once, not to /v1/traces/v1/traces', async () => {
    const tracing = await Tracing.create({
      serviceName: 'otlp-endpoint-test',
      env: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: `${base}/v1/traces` },
    });
    expect(tracing.exporting).toBe(true);
    tracing.startServerSpan('request', {}, {}).end();
    await tracing.shutdown(); // flushes the batch
    expect(paths).toEqual(['/v1/traces']);
  });
});

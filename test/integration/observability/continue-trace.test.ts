/**
 * `context.continueTrace()` over real HTTP: a handler resumes a trace recorded earlier (as
 * kud-job-launch does with the traceparent annotated on its Job). The reply, its HTTP header,
 * the spans and the log lines after the call are in the continued trace; the span the request
 * started in ends in the event's own trace and is linked from the continued one; a malformed
 * traceparent changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { postEvent } from '../../../shared/cloudevents/sink-client.js';
import { createLogger } from '../../../shared/log.js';
import { startFunctionServer, type RunningFunctionServer } from '../../../shared/server/function-server.js';
import { on, type FunctionDefinition } from '../../../shared/server/types.js';
import { Tracing, traceIdOf } from '../../../shared/telemetry/tracing.js';

const resumeType = 'test.resume';
const traceparentOf = (traceId: string) => `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
const newTraceId = () => randomBytes(16).toString('hex');

/** Logs one line, continues the trace named in the data, logs another, replies. */
const resumingFunction: FunctionDefinition<Record<string, never>> = {
  name: 'resumer',
  events: {
    [resumeType]: on(z.object({ resume: z.string() }), async (context, { resume }) => {
      context.log.info('before');
      const continued = context.continueTrace?.(resume) ?? false;
      context.log.info('after', { continued, context_traceparent: context.traceparent });
      return new CloudEvent({ type: 'test.resumed', source: '/test', data: { continued } });
    }),
  },
  configSchema: z.object({}),
};

interface LogLine {
  msg: string;
  ce_id?: string;
  trace_id?: string;
  continued?: boolean;
  context_traceparent?: string;
}

function startServer(tracing: Tracing | false, lines: LogLine[]) {
  return startFunctionServer({
    definition: resumingFunction,
    host: '127.0.0.1',
    port: 0,
    kubeConfig: new KubeConfig(),
    env: {},
    log: createLogger({ sink: (line) => lines.push(JSON.parse(line) as LogLine), level: 'debug' }),
    tracing,
    processMetrics: false,
  });
}

const resumeEvent = (resume: string) =>
  new CloudEvent({
    type: resumeType,
    source: '/test',
    datacontenttype: 'application/json',
    data: { resume },
  });

describe('continueTrace with tracing on', () => {
  const spans = new InMemorySpanExporter();
  const lines: LogLine[] = [];
  let server: RunningFunctionServer;

  beforeAll(async () => {
    const tracing = await Tracing.create({
      serviceName: 'resumer',
      env: {},
      spanProcessors: [new SimpleSpanProcessor(spans)],
    });
    server = await startServer(tracing, lines);
  });
  afterAll(async () => {
    await server.close();
  });

  it('moves the reply, the spans and the later log lines into the recorded trace', async () => {
    const incomingTrace = newTraceId();
    const recordedTrace = newTraceId();
    const recorded = traceparentOf(recordedTrace);
    const event = resumeEvent(recorded);
    const response = await postEvent(server.url, event, {
      headers: { traceparent: traceparentOf(incomingTrace) },
    });

    expect(response.status).toBe(200);
    expect(response.replyEvent?.data).toEqual({ continued: true });
    expect(traceIdOf(response.replyEvent?.['traceparent'] as string)).toBe(recordedTrace);
    expect(traceIdOf(response.headers.traceparent)).toBe(recordedTrace);

    const finished = spans.getFinishedSpans();
    const first = finished.find((s) => s.spanContext().traceId === incomingTrace);
    const resumed = finished.find((s) => s.spanContext().traceId === recordedTrace);
    expect(first?.attributes['bpa.trace.continued_in']).toBe(recordedTrace);
    // The continued span is a child of the recorded parent and links back to the first span.
    expect(resumed?.parentSpanContext?.spanId).toBe(recorded.split('-')[2]);
    expect(resumed?.links.map((l) => l.context.spanId)).toEqual([first?.spanContext().spanId]);
    expect(resumed?.attributes['cloudevents.event_id']).toBe(event.id);
    expect(resumed?.attributes['http.response.status_code']).toBe(200);

    const ofRequest = lines.filter((l) => l.ce_id === event.id);
    expect(ofRequest.map((l) => [l.msg, l.trace_id])).toEqual([
      ['before', incomingTrace],
      ['continuing a recorded trace', recordedTrace],
      ['after', recordedTrace],
      ['event', recordedTrace],
    ]);
    expect(ofRequest.find((l) => l.msg === 'after')?.context_traceparent).toBe(recorded);
  });

  it('ignores a malformed traceparent and stays in the event’s trace', async () => {
    const incomingTrace = newTraceId();
    const event = resumeEvent('00-not-a-trace');
    const response = await postEvent(server.url, event, {
      headers: { traceparent: traceparentOf(incomingTrace) },
    });
    expect(response.replyEvent?.data).toEqual({ continued: false });
    expect(traceIdOf(response.headers.traceparent)).toBe(incomingTrace);
    const ofRequest = lines.filter((l) => l.ce_id === event.id);
    expect(ofRequest.every((l) => l.trace_id === incomingTrace)).toBe(true);
    expect(ofRequest.map((l) => l.msg)).toContain('malformed traceparent not continued');
  });
});

describe('continueTrace with tracing off', () => {
  it('logs the caller’s trace id, then the recorded one', async () => {
    const lines: LogLine[] = [];
    const server = await startServer(false, lines);
    try {
      const recordedTrace = newTraceId();
      const event = resumeEvent(traceparentOf(recordedTrace));
      const incomingTrace = newTraceId();
      const response = await postEvent(server.url, event, {
        headers: { traceparent: traceparentOf(incomingTrace) },
      });
      expect(response.replyEvent?.data).toEqual({ continued: true });
      const ofRequest = lines.filter((l) => l.ce_id === event.id);
      expect(ofRequest.map((l) => [l.msg, l.trace_id])).toEqual([
        ['before', incomingTrace],
        ['continuing a recorded trace', recordedTrace],
        ['after', recordedTrace],
        ['event', recordedTrace],
      ]);
    } finally {
      await server.close();
    }
  });
});

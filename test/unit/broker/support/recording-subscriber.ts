import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTP, type CloudEvent } from 'cloudevents';

/** One request a subscriber received. */
export interface ReceivedRequest {
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** performance.now() when the request body had fully arrived. */
  at: number;
  /** The CloudEvent as the cloudevents SDK parses it. */
  event: CloudEvent<unknown>;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Wait this long before answering (timeout tests). */
  delayMs?: number;
}

export type Script = (request: ReceivedRequest, index: number) => Answer;

export interface RecordingSubscriber {
  url: string;
  received: ReceivedRequest[];
  /** Resolves once `count` requests have arrived (rejects after `timeoutMs`). */
  waitForCount(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** A real HTTP subscriber on 127.0.0.1 that records every request and answers from a script. */
export async function startSubscriber(
  script: Script = () => ({ status: 202 }),
): Promise<RecordingSubscriber> {
  const received: ReceivedRequest[] = [];
  const pending = new Set<NodeJS.Timeout>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const entry: ReceivedRequest = {
        headers: request.headers,
        body,
        at: performance.now(),
        event: HTTP.toEvent({ headers: request.headers, body: body.toString('utf8') }) as CloudEvent<unknown>,
      };
      received.push(entry);
      const answer = script(entry, received.length - 1);
      const send = () => {
        response.writeHead(answer.status, answer.headers ?? {});
        response.end(answer.body ?? '');
      };
      if (answer.delayMs) {
        const timer = setTimeout(() => {
          pending.delete(timer);
          if (!response.destroyed) send();
        }, answer.delayMs);
        pending.add(timer);
      } else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    received,
    waitForCount: (count, timeoutMs = 20_000) =>
      waitFor(() => received.length >= count, timeoutMs, `${count} requests (got ${received.length})`).then(
        () => received,
      ),
    close: async () => {
      for (const timer of pending) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls a condition every 10 ms. */
export async function waitFor(
  condition: () => boolean,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** POSTs a CloudEvent in binary (default) or structured mode; answers status and body. */
export async function postEvent(
  url: string,
  event: CloudEvent<unknown>,
  mode: 'binary' | 'structured' = 'binary',
  extraHeaders: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: string }> {
  const message = mode === 'binary' ? HTTP.binary(event) : HTTP.structured(event);
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...(message.headers as Record<string, string>), ...extraHeaders },
    body: message.body as string,
  });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

/** A Broker object as it would come from YAML. */
export function brokerObject(name: string, delivery?: Record<string, unknown>, namespace = 'test') {
  return {
    apiVersion: 'eventing.knative.dev/v1',
    kind: 'Broker',
    metadata: { name, namespace },
    ...(delivery ? { spec: { delivery } } : {}),
  };
}

/** A Trigger object subscribing a URI. */
export function triggerObject(
  name: string,
  subscriberUri: string,
  spec: Record<string, unknown> = {},
  broker = 'default',
  namespace = 'test',
) {
  return {
    apiVersion: 'eventing.knative.dev/v1',
    kind: 'Trigger',
    metadata: { name, namespace },
    spec: { broker, subscriber: { uri: subscriberUri }, ...spec },
  };
}

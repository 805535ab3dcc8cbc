import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CloudEvent } from 'cloudevents';
import { parseHttpEvent } from '../../../../shared/cloudevents/message.js';

export interface RecordedEvent {
  event: CloudEvent<unknown>;
  /** The HTTP headers it came with (the broker's `traceparent` among them). */
  headers: IncomingHttpHeaders;
}

/** A Trigger subscriber on 127.0.0.1 that keeps every CloudEvent it is sent. */
export class EventRecorder {
  readonly received: RecordedEvent[] = [];
  private server?: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const parsed = parseHttpEvent(request.headers as Record<string, string>, Buffer.concat(chunks));
        if (parsed.ok) this.received.push({ event: parsed.event, headers: request.headers });
        response.writeHead(parsed.ok ? 202 : 400).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

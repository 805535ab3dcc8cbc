import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { BpaError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import type { IngestResult } from './dispatcher.js';
import { decodeHttpEvent, type RawEvent } from '../../shared/cloudevents/http-codec.js';
import type { ResolvedBroker } from './load-config.js';
import { traceContextFrom, type TraceContext } from './trace-context.js';

/** Largest event body the ingress reads; larger requests get 413. */
export const maxIngressBodyBytes = 10 * 1024 * 1024;

export interface IngressDeps {
  findBroker: (namespace: string, name: string) => ResolvedBroker | undefined;
  ingest: (broker: ResolvedBroker, event: RawEvent, trace: TraceContext) => IngestResult;
  registry: Registry;
  countRejected: (namespace: string, name: string, status: number) => void;
  log: Logger;
}

/**
 * Reads a request body up to `limit` bytes and calls `done` with it (or 'too-large'). Listeners
 * rather than a promise: this runs once per event.
 */
function readBody(request: IncomingMessage, limit: number, done: (body: Buffer | 'too-large') => void): void {
  let first: Buffer | undefined;
  let chunks: Buffer[] | undefined;
  let size = 0;
  request.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > limit) return;
    if (first === undefined) first = chunk;
    else (chunks ??= [first]).push(chunk);
  });
  // A producer that goes away mid-body gets no answer; there is nobody to give one to.
  request.on('error', () => undefined);
  request.on('end', () => {
    if (size > limit) done('too-large');
    else done(chunks ? Buffer.concat(chunks) : (first ?? Buffer.alloc(0)));
  });
}

const answerAccepted = (response: ServerResponse) => {
  response.writeHead(202).end();
};
const answerNextTurn = (response: ServerResponse) => {
  setImmediate(answerAccepted, response);
};

/**
 * The broker ingress, in the order knative/eventing's `ingress_handler.go` checks things:
 * OPTIONS → 200 (`Allow: POST, OPTIONS`); any other non-POST → 405; `/` → 404; a path that is not
 * `/<namespace>/<broker>` → 400; unknown broker → 404; not a valid CloudEvent → 400; TTL
 * exhausted → 400; else 202. `GET /metrics` serves Prometheus metrics on the same port.
 */
export function createIngressHandler(deps: IngressDeps) {
  return (request: IncomingMessage, response: ServerResponse): void => {
    const requestUri = request.url ?? '/';
    if (request.method === 'GET' && requestUri.split('?')[0] === '/metrics') {
      void deps.registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': deps.registry.contentType }).end(text),
        (error: unknown) => {
          deps.log.error('metrics failed', { error: String(error) });
          response.writeHead(500).end();
        },
      );
      return;
    }
    response.setHeader('Allow', 'POST, OPTIONS');
    if (request.method === 'OPTIONS') {
      response.setHeader('WebHook-Allowed-Origin', '*');
      response.setHeader('WebHook-Allowed-Rate', '*');
      response.writeHead(200).end();
      return;
    }
    if (request.method !== 'POST') {
      request.resume();
      response.writeHead(405).end();
      return;
    }
    if (requestUri === '/') {
      request.resume();
      response.writeHead(404).end();
      return;
    }
    const segments = (requestUri.endsWith('/') ? requestUri.slice(0, -1) : requestUri).split('/');
    if (segments.length !== 3) {
      request.resume();
      response.writeHead(400).end();
      return;
    }
    const [, namespace = '', name = ''] = segments;
    const broker = deps.findBroker(namespace, name);
    if (!broker) {
      request.resume();
      deps.countRejected(namespace, name, 404);
      response.writeHead(404).end();
      return;
    }
    readBody(request, maxIngressBodyBytes, (body) => {
      try {
        answerEvent(namespace, name, broker, request, response, body);
      } catch (error) {
        deps.log.error('ingress handler failed', { error: String(error) });
        if (!response.headersSent) response.writeHead(500);
        response.end();
      }
    });
  };

  function answerEvent(
    namespace: string,
    name: string,
    broker: ResolvedBroker,
    request: IncomingMessage,
    response: ServerResponse,
    body: Buffer | 'too-large',
  ): void {
    if (body === 'too-large') {
      deps.countRejected(namespace, name, 413);
      response.writeHead(413).end();
      return;
    }
    let event: RawEvent;
    try {
      event = decodeHttpEvent(request.headers, body);
    } catch (error) {
      deps.log.info('ingress refused an invalid CloudEvent', {
        broker: `${namespace}/${name}`,
        reason: error instanceof BpaError ? error.message : String(error),
      });
      deps.countRejected(namespace, name, 400);
      response.writeHead(400).end();
      return;
    }
    const result = deps.ingest(broker, event, traceContextFrom(request.headers));
    if (result.status !== 202) {
      response.writeHead(result.status).end();
      return;
    }
    // Deliveries have been started (their requests are written). The 202 waits one more loop
    // turn, so that the poll phase in between runs first: on the embedded stack a subscriber
    // shares this event loop and reads the event there, instead of after the broker's write of
    // the 202 and whatever the producer does on receiving it. The producer's round trip stays
    // the same (the bench prints both).
    setImmediate(answerNextTurn, response);
  }
}

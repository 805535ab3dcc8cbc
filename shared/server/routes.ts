import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FunctionMetrics } from '../telemetry/metrics.js';
import { healthProbes } from './health.js';
import type { Responder } from './responses.js';

/** What the routes serve besides the probes: events on `/`, and the metrics when they are on. */
export interface RouteTargets {
  respond: Responder;
  draining: () => boolean;
  /** POST / */
  event(request: IncomingMessage, response: ServerResponse): Promise<void>;
  metrics?: FunctionMetrics;
}

const firstHeader = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 *   POST /                 a CloudEvent → `event`
 *   OPTIONS /              200, Allow: POST, OPTIONS (and the CloudEvents webhook handshake)
 *   GET /health/readiness  200, or 503 while draining
 *   GET /health/liveness   200
 *   GET /metrics           Prometheus text (per-server registry)
 * Any other method on these paths is 405 with Allow; any other path 404.
 */
export async function routeRequest(
  request: IncomingMessage,
  response: ServerResponse,
  targets: RouteTargets,
): Promise<void> {
  const { respond } = targets;
  const path = (request.url ?? '/').split('?')[0]!;
  const method = request.method ?? 'GET';
  if (path === '/') {
    if (method === 'POST') return targets.event(request, response);
    if (method === 'OPTIONS') {
      // CloudEvents HTTP webhook abuse protection: allow the requesting origin.
      const origin = firstHeader(request.headers['webhook-request-origin']);
      return respond.respond(response, 200, {
        allow: 'POST, OPTIONS',
        ...(origin ? { 'webhook-allowed-origin': origin, 'webhook-allowed-rate': '*' } : {}),
      });
    }
    return respond.error(
      response,
      405,
      'MethodNotAllowed',
      `${method} is not allowed on /; POST a CloudEvent`,
      {
        allow: 'POST, OPTIONS',
      },
    );
  }
  const getOnly = (serve: () => void | Promise<void>) => {
    if (method === 'GET' || method === 'HEAD') return serve();
    if (method === 'OPTIONS') return respond.respond(response, 200, { allow: 'GET, HEAD, OPTIONS' });
    return respond.error(response, 405, 'MethodNotAllowed', `${method} is not allowed on ${path}`, {
      allow: 'GET, HEAD, OPTIONS',
    });
  };
  const probe = Object.hasOwn(healthProbes, path) ? healthProbes[path] : undefined;
  if (probe)
    return getOnly(() => {
      const { status, body } = probe(targets.draining());
      respond.json(response, status, body);
    });
  const metrics = targets.metrics;
  if (path === '/metrics' && metrics) {
    return getOnly(async () => {
      const exposition = await metrics.exposition();
      respond.respond(response, 200, { 'content-type': exposition.contentType }, exposition.body);
    });
  }
  return respond.error(response, 404, 'NotFound', `No route for ${path}`);
}

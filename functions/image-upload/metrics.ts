import { collectDefaultMetrics } from 'prom-client';
import {
  counterSpec,
  FunctionMetrics,
  histogramSpec,
  secondsBuckets,
} from '../../shared/telemetry/metrics.js';

/** The parts of the image service a request is for: a bounded label, never the path itself. */
export const imageRoutes = ['tus', 'legacy', 'download', 'health', 'metrics', 'other'] as const;
export type ImageRoute = (typeof imageRoutes)[number];

const labelNames = ['route', 'method', 'code'] as const;
const methods = new Set(['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS']);

export const imageRequestsSpec = counterSpec({
  name: 'bpa_image_http_requests_total',
  help: 'HTTP requests the image service answered, by route, method and status code',
  labelNames,
});
export const imageRequestDurationSpec = histogramSpec({
  name: 'bpa_image_http_request_duration_seconds',
  help: 'Seconds from a request received to its answer sent or its connection closed (an upload is one long request)',
  labelNames,
  buckets: [...secondsBuckets, 1800, 3600],
});

/** The route label of a request target (`/files/...`, `/v1/baremetalcluster/...`, `/images/...`). */
export function routeOf(url: string | undefined): ImageRoute {
  const path = (url ?? '').split('?')[0] ?? '';
  if (path === '/files' || path.startsWith('/files/')) return 'tus';
  if (path.startsWith('/v1/')) return 'legacy';
  if (path.startsWith('/images/')) return 'download';
  if (path.startsWith('/health/')) return 'health';
  if (path === '/metrics') return 'metrics';
  return 'other';
}

/**
 * The image service's /metrics: its requests plus the process_* and nodejs_* gauges, as the
 * function servers have (one registry per service, so two in one process do not collide).
 */
export function imageServiceMetrics() {
  const metrics = new FunctionMetrics();
  collectDefaultMetrics({ register: metrics.registry });
  const requests = metrics.counter(imageRequestsSpec);
  const duration = metrics.histogram(imageRequestDurationSpec);
  return {
    exposition: () => metrics.exposition(),
    record(route: ImageRoute, method: string | undefined, code: number, started: bigint) {
      const labels = {
        route,
        // A method Node parsed but nobody serves is one label value, not one each.
        method: method && methods.has(method) ? method : 'other',
        code: String(code),
      };
      requests.inc(labels);
      duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    },
  };
}

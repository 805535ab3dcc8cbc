import { request, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/**
 * The API server's own count of the requests it served (`apiserver_request_total` on its
 * `/metrics`), by verb and resource, so a bench counts every client's requests (the functions,
 * the event sources, the bench itself) without trusting an instrumented client. A WATCH is
 * counted when it ends; the benches read the counters between bursts, so open watches are not
 * in a delta.
 */
export type RequestCounts = Map<string, number>;

const sample = /^apiserver_request_total\{([^}]*)\}\s+([0-9.e+]+)$/;
const label = /(\w+)="([^"]*)"/g;

/** `POST configmaps`, `PUT provisionings/status`, ... → requests served so far. */
export function parseRequestCounts(text: string): RequestCounts {
  const counts: RequestCounts = new Map();
  for (const line of text.split('\n')) {
    const match = sample.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries([...(match[1] ?? '').matchAll(label)].map(([, k, v]) => [k, v]));
    // Non-resource requests (/healthz, /metrics) carry their path as the subresource.
    const resource = !labels.resource
      ? labels.subresource || '(none)'
      : labels.subresource
        ? `${labels.resource}/${labels.subresource}`
        : labels.resource;
    const key = `${labels.verb ?? '?'} ${resource}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(match[2]));
  }
  return counts;
}

export async function readRequestCounts(kubeConfig: KubeConfig): Promise<RequestCounts> {
  return parseRequestCounts(await readMetricsText(kubeConfig));
}

const dispatched = /^apiserver_flowcontrol_dispatched_requests_total\{([^}]*)\}\s+([0-9.e+]+)$/;

/**
 * Requests the API server dispatched per FlowSchema (API Priority and Fairness:
 * `apiserver_flowcontrol_dispatched_requests_total`): with a FlowSchema per ServiceAccount, the
 * API server's own count of each client's requests, which `apiserver_request_total` does not
 * split by client. Every request counts when it is dispatched, a WATCH when it starts.
 */
export function parseFlowSchemaCounts(text: string): RequestCounts {
  const counts: RequestCounts = new Map();
  for (const line of text.split('\n')) {
    const match = dispatched.exec(line);
    if (!match) continue;
    const flowSchema = /flow_schema="([^"]*)"/.exec(match[1] ?? '')?.[1] ?? '?';
    counts.set(flowSchema, (counts.get(flowSchema) ?? 0) + Number(match[2]));
  }
  return counts;
}

/** The API server's `/metrics` as text (the admin's client certificate or token). */
export async function readMetricsText(kubeConfig: KubeConfig): Promise<string> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no cluster');
  const options: RequestOptions = {};
  // Client certificates and CA through node:https (global fetch ignores an https agent).
  await kubeConfig.applyToHTTPSOptions(options);
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(new URL('/metrics', cluster.server), options, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        response.statusCode === 200
          ? resolve(Buffer.concat(chunks).toString('utf8'))
          : reject(new Error(`GET /metrics: HTTP ${response.statusCode}`)),
      );
      response.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  return text;
}

/** after - before, without the keys that did not move. */
export function requestDelta(before: RequestCounts, after: RequestCounts): RequestCounts {
  const delta: RequestCounts = new Map();
  for (const [key, value] of after) {
    const moved = value - (before.get(key) ?? 0);
    if (moved > 0) delta.set(key, moved);
  }
  return delta;
}

export const totalRequests = (counts: RequestCounts): number =>
  [...counts.values()].reduce((sum, value) => sum + value, 0);

/** `PUT provisionings/status 812, POST events 604, ...`, largest first, per `per` objects. */
export function describeRequests(counts: RequestCounts, per: number, limit = 8): string {
  return [...counts]
    .sort(([, a], [, b]) => b - a)
    .slice(0, limit)
    .map(([key, value]) => `${key} ${(value / per).toFixed(1)}`)
    .join(', ');
}

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { provisioningsResource, softwaresResource } from '../../shared/k8s/resources.js';
import type { Logger } from '../../shared/log.js';
import { LiveViewHub, type WatchedResource } from './hub.js';
import { listenOnFirstFree } from '../control-plane/free-port.js';
import { liveViewPage } from './page.js';
import { cloudEventFromRequest } from './receive-cloudevent.js';
import type { StoredCloudEvent } from './timeline-event.js';
import { watchCustomResource, type KubeObject, type ResourceWatch } from './resource-watch.js';

export interface LiveViewOptions {
  host: string;
  /** 0 lets the kernel pick. */
  port: number;
  /** Ports tried upward from `port` while they are taken (default 1: `port` or an error). */
  portSpan?: number;
  /** When given, Provisioning and Software resources are listed and watched on this API. */
  kubeConfig?: KubeConfig;
  /**
   * Whether each CloudEvent POSTed to `/api/cloudevents` becomes a timeline entry (trigger
   * `subscriber`, or `?trigger=` of the URL). Default true: that is how the page follows a
   * cluster's broker. The embedded stack passes false: its timeline comes from the broker's
   * delivery records, and the POSTed copies only feed the details panel.
   */
  recordReceived?: boolean;
  /** Called for each event POSTed to `/api/dead-letter` (the embedded stack's dead-letter sink). */
  onDeadLetter?: (event: { id: string; type: string; subject?: string } & StoredCloudEvent) => void;
  log: Logger;
}

export interface LiveView {
  /** `http://host:port/` */
  url: string;
  /** Where a cluster's broker can deliver events (Trigger subscriber URI). */
  cloudEventsUrl: string;
  /** A dead-letter sink that keeps the event for the page and reports it. */
  deadLetterUrl: string;
  hub: LiveViewHub;
  /** Resolves when the first list of each watched kind arrived. */
  ready: Promise<void>;
  stop(): Promise<void>;
}

const maxBodyBytes = 1024 * 1024;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        reject(new Error('request body too large'));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function toWatched(kind: WatchedResource['kind'], object: KubeObject): WatchedResource {
  return {
    kind,
    namespace: object.metadata?.namespace ?? '',
    name: object.metadata?.name ?? '',
    object,
  };
}

/** Serves the live view page, its SSE stream, a state snapshot and a CloudEvent sink. */
export async function startLiveView(options: LiveViewOptions): Promise<LiveView> {
  const { log } = options;
  const hub = new LiveViewHub();
  const recordReceived = options.recordReceived ?? true;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://live-view');
    if (req.method === 'GET' && (url.pathname === '/' || url.pathname === '/index.html')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(liveViewPage);
    } else if (req.method === 'GET' && url.pathname === '/api/stream') {
      hub.attach(res);
    } else if (req.method === 'GET' && url.pathname === '/api/state') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(hub.snapshot()));
    } else if (req.method === 'GET' && url.pathname.startsWith('/health')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok\n');
    } else if (req.method === 'GET' && url.pathname.startsWith('/api/events/')) {
      const stored = hub.cloudEvent(decodeURIComponent(url.pathname.slice('/api/events/'.length)));
      res.writeHead(stored ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(stored ?? { error: { reason: 'NotFound', message: 'event not kept (yet)' } }));
    } else if (
      req.method === 'POST' &&
      (url.pathname === '/api/cloudevents' || url.pathname === '/api/dead-letter')
    ) {
      const body = await readBody(req);
      try {
        const event = cloudEventFromRequest(req.headers, body);
        hub.storeCloudEvent(event.id, { attributes: event.attributes, data: event.data });
        if (url.pathname === '/api/dead-letter') options.onDeadLetter?.(event);
        else if (recordReceived || url.searchParams.has('trigger'))
          hub.recordEvent({
            id: event.id,
            type: event.type,
            source: event.source,
            ...(event.subject ? { subject: event.subject } : {}),
            trigger: url.searchParams.get('trigger') ?? 'subscriber',
            status: 'received',
            outcome: 'received',
          });
      } catch (error) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { reason: 'InvalidCloudEvent', message: String(error) } }));
        return;
      }
      // 2xx with no body: the broker records the delivery as done and routes no reply.
      res.writeHead(202);
      res.end();
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      log.warn('live view request failed', { error: String(error) });
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const port = await listenOnFirstFree(server, options.host, options.port, options.portSpan ?? 1);
  const url = `http://${options.host}:${port}/`;
  const heartbeat = setInterval(() => hub.heartbeat(), 15000);
  heartbeat.unref();

  const watches: ResourceWatch[] = [];
  if (options.kubeConfig) {
    for (const [kind, resource] of [
      ['Provisioning', provisioningsResource],
      ['Software', softwaresResource],
    ] as const) {
      watches.push(
        watchCustomResource({
          kubeConfig: options.kubeConfig,
          resource,
          log,
          onList: (items) =>
            hub.replaceResources(
              kind,
              items.map((item) => toWatched(kind, item)),
            ),
          onChange: (type, object) => {
            const watched = toWatched(kind, object);
            if (type === 'DELETED')
              hub.applyResourceChange({
                action: 'delete',
                kind,
                namespace: watched.namespace,
                name: watched.name,
              });
            else hub.applyResourceChange({ action: 'upsert', resource: watched });
          },
        }),
      );
    }
  }

  return {
    url,
    cloudEventsUrl: `${url}api/cloudevents`,
    deadLetterUrl: `${url}api/dead-letter`,
    hub,
    ready: Promise.all(watches.map((w) => w.ready)).then(() => undefined),
    async stop() {
      clearInterval(heartbeat);
      for (const watch of watches) watch.stop();
      hub.closeAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

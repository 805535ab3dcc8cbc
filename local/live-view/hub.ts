import type { ServerResponse } from 'node:http';
import type { StoredCloudEvent, TimelineEvent, TimelineEventInput } from './timeline-event.js';

/** A Provisioning or Software object as last seen on the API server (whole object). */
export interface WatchedResource {
  kind: 'Provisioning' | 'Software';
  namespace: string;
  name: string;
  object: Record<string, unknown>;
}

export type ResourceChange =
  | { action: 'upsert'; resource: WatchedResource }
  | { action: 'delete'; kind: WatchedResource['kind']; namespace: string; name: string };

const resourceKey = (kind: string, namespace: string, name: string) => `${kind}/${namespace}/${name}`;

/**
 * The live view's state and its Server-Sent Events fan-out: the latest version of every
 * watched resource and the last `capacity` timeline events. New page loads get a snapshot,
 * open pages get each change as it happens.
 */
export class LiveViewHub {
  private readonly resources = new Map<string, WatchedResource>();
  private readonly events: TimelineEvent[] = [];
  private readonly clients = new Set<ServerResponse>();
  /** Insertion-ordered, so the oldest is dropped first. */
  private readonly cloudEvents = new Map<string, StoredCloudEvent>();
  private seq = 0;

  constructor(
    private readonly capacity = 500,
    private readonly storedCapacity = 2000,
  ) {}

  /** Keeps an event's attributes and data for the details panel. */
  storeCloudEvent(id: string, event: StoredCloudEvent): void {
    this.cloudEvents.delete(id);
    this.cloudEvents.set(id, event);
    if (this.cloudEvents.size > this.storedCapacity) {
      const oldest = this.cloudEvents.keys().next().value;
      if (oldest !== undefined) this.cloudEvents.delete(oldest);
    }
  }

  cloudEvent(id: string): StoredCloudEvent | undefined {
    return this.cloudEvents.get(id);
  }

  snapshot(): { resources: WatchedResource[]; events: TimelineEvent[] } {
    return { resources: [...this.resources.values()], events: [...this.events] };
  }

  recordEvent(input: TimelineEventInput): TimelineEvent {
    const event: TimelineEvent = { ...input, seq: ++this.seq, at: input.at ?? new Date().toISOString() };
    this.events.push(event);
    if (this.events.length > this.capacity) this.events.splice(0, this.events.length - this.capacity);
    this.broadcast('cloudevent', event);
    return event;
  }

  applyResourceChange(change: ResourceChange): void {
    if (change.action === 'upsert') {
      const { kind, namespace, name } = change.resource;
      this.resources.set(resourceKey(kind, namespace, name), change.resource);
    } else {
      this.resources.delete(resourceKey(change.kind, change.namespace, change.name));
    }
    this.broadcast('resource', change);
  }

  /** Replaces every resource of a kind (after a re-list) and tells the pages. */
  replaceResources(kind: WatchedResource['kind'], list: WatchedResource[]): void {
    for (const [key, resource] of this.resources) if (resource.kind === kind) this.resources.delete(key);
    for (const resource of list)
      this.resources.set(resourceKey(resource.kind, resource.namespace, resource.name), resource);
    this.broadcast('snapshot', this.snapshot());
  }

  /** Starts an SSE stream on `res`: a snapshot first, then every change. */
  attach(res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    res.write(`retry: 1000\n\n`);
    this.clients.add(res);
    res.on('close', () => this.clients.delete(res));
    this.send(res, 'snapshot', this.snapshot());
  }

  /** A comment line keeps idle connections (and proxies) from timing out. */
  heartbeat(): void {
    for (const res of this.clients) res.write(': keep-alive\n\n');
  }

  closeAll(): void {
    for (const res of this.clients) res.end();
    this.clients.clear();
  }

  private broadcast(name: string, payload: unknown): void {
    for (const res of this.clients) this.send(res, name, payload);
  }

  private send(res: ServerResponse, name: string, payload: unknown): void {
    res.write(`event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`);
  }
}

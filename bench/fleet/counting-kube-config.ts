import type { Agent } from 'node:https';
import type { Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

type RequestContext = Parameters<KubeConfig['applySecurityAuthentication']>[0];

/**
 * The scale bench's instrumented client: a KubeConfig that counts the API requests made through
 * it (every generated client's call authenticates once, every Watch asks for fetch options once)
 * and the bytes read from the API server (each connection's socket bytesRead, TLS records
 * included, so slightly more than the JSON).
 */
export class CountingKubeConfig extends KubeConfig {
  requests = 0;
  private closedBytes = 0;
  private readonly open = new Set<Socket>();

  bytesRead(): number {
    let total = this.closedBytes;
    for (const socket of this.open) total += socket.bytesRead;
    return total;
  }

  /** Requests and bytes read per resource (`baremetalhosts`, `provisionings/status`...). */
  readonly byResource = new Map<string, { requests: number; bytes: number }>();
  private readonly agentResource = new WeakMap<object, string>();

  private tally(resource: string, requests: number, bytes: number) {
    const entry = this.byResource.get(resource) ?? { requests: 0, bytes: 0 };
    entry.requests += requests;
    entry.bytes += bytes;
    this.byResource.set(resource, entry);
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    this.requests++;
    await super.applySecurityAuthentication(context);
    // client-node makes one agent per request: its sockets' bytes are this request's.
    const resource = resourceOf(context.getUrl());
    this.tally(resource, 1, 0);
    const agent = context.getAgent();
    if (agent) this.agentResource.set(agent, resource);
  }

  override async applyToFetchOptions(opts: Parameters<KubeConfig['applyToFetchOptions']>[0]) {
    this.requests++;
    return super.applyToFetchOptions(opts);
  }

  constructor() {
    super();
    // createAgent is private in client-node's types: wrapped on the instance, so every agent
    // (one per request in client-node 1.x) reports its sockets.
    const self = this as unknown as { createAgent: (...args: unknown[]) => Agent };
    const createAgent = self.createAgent.bind(this);
    self.createAgent = (...args: unknown[]) => {
      const agent = createAgent(...args);
      const create = (agent.createConnection as (...a: unknown[]) => Socket).bind(agent);
      agent.createConnection = ((...a: unknown[]) => {
        const socket = create(...a);
        this.open.add(socket);
        socket.once('close', () => {
          this.open.delete(socket);
          this.closedBytes += socket.bytesRead;
          this.tally(this.agentResource.get(agent) ?? 'watch', 0, socket.bytesRead);
        });
        return socket;
      }) as Agent['createConnection'];
      return agent;
    };
  }
}

/** `baremetalhosts`, `provisionings/status`, `events`... from an API URL. */
function resourceOf(url: string): string {
  const parts = new URL(url).pathname.split('/').filter(Boolean);
  const rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  const scoped = rest[0] === 'namespaces' && rest.length >= 3 ? rest.slice(2) : rest;
  const [resource = '', , subresource] = scoped;
  return subresource ? `${resource}/${subresource}` : resource;
}

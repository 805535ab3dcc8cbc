import type { Server, Socket } from 'node:net';
import { connect, createServer } from 'node:net';
import type { NodeNetwork } from './network.js';
import type { ServiceBackend, ServiceView } from './service-view.js';

/**
 * kube-proxy's role, in user space: one TCP listener per ClusterIP:port, on an address of the
 * node's bridge, forwarding each connection to a ready endpoint (round robin). The `kubernetes`
 * Service leads to kube-apiserver on 127.0.0.1, which pods cannot reach otherwise.
 */
export interface ApiserverEndpoint {
  host: string;
  port: number;
}

interface Listener {
  server: Server;
  backends: ServiceBackend[];
  next: number;
}

export class ServiceProxy {
  private readonly listeners = new Map<string, Listener>();
  private readonly addresses = new Set<string>();
  private readonly sockets = new Set<Socket>();
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly network: NodeNetwork,
    private readonly apiserver: ApiserverEndpoint,
    private readonly log: (message: string, fields?: Record<string, unknown>) => void,
  ) {}

  /** Reconciles listeners with the Services (serialised: address changes are commands). */
  sync(views: ServiceView[]): Promise<void> {
    this.queue = this.queue
      .then(() => this.apply(views))
      .catch((error: unknown) => this.log('service proxy sync failed', { error: String(error) }));
    return this.queue;
  }

  async stop(): Promise<void> {
    await this.queue;
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(
      [...this.listeners.values()].map(({ server }) => new Promise((done) => server.close(done))),
    );
    this.listeners.clear();
    for (const address of this.addresses) await this.network.removeServiceAddress(address);
    this.addresses.clear();
  }

  private async apply(views: ServiceView[]): Promise<void> {
    const wanted = new Map<string, { ip: string; port: number; backends: ServiceBackend[] }>();
    for (const view of views) {
      if (!view.clusterIP || view.type === 'ExternalName') continue;
      const isApiserver = view.namespace === 'default' && view.name === 'kubernetes';
      for (const port of view.ports) {
        const backends = isApiserver
          ? [{ ip: this.apiserver.host, port: this.apiserver.port }]
          : port.backends;
        wanted.set(`${view.clusterIP}:${port.port}`, { ip: view.clusterIP, port: port.port, backends });
      }
    }
    for (const [key, listener] of this.listeners) {
      if (wanted.has(key)) continue;
      listener.server.close();
      this.listeners.delete(key);
    }
    const wantedAddresses = new Set([...wanted.values()].map(({ ip }) => ip));
    for (const address of wantedAddresses) {
      if (this.addresses.has(address)) continue;
      await this.network.addServiceAddress(address);
      this.addresses.add(address);
    }
    for (const [key, { ip, port, backends }] of wanted) {
      const existing = this.listeners.get(key);
      if (existing) {
        existing.backends = backends;
        continue;
      }
      const listener: Listener = {
        server: createServer((socket) => this.forward(listener, socket)),
        backends,
        next: 0,
      };
      this.listeners.set(key, listener);
      await new Promise<void>((resolve) => {
        listener.server.once('error', (error) => {
          this.log('service proxy cannot listen', { address: key, error: error.message });
          this.listeners.delete(key);
          resolve();
        });
        listener.server.listen(port, ip, () => resolve());
      });
    }
    for (const address of this.addresses) {
      if (wantedAddresses.has(address)) continue;
      await this.network.removeServiceAddress(address);
      this.addresses.delete(address);
    }
  }

  private forward(listener: Listener, client: Socket): void {
    const backend = listener.backends[listener.next++ % Math.max(1, listener.backends.length)];
    if (!backend) {
      // No ready endpoint: refuse, as kube-proxy's REJECT rule does.
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(backend.port, backend.ip);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  }
}

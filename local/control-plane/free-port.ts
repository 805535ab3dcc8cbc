/**
 * The one free-port helper: the control plane, the stack, `bpa dev`, the labs, the tests and
 * the bench all pick their ports here. The kernel (or a probe) finds the port, we release it
 * and the caller binds it a moment later; a port is only free until someone binds it, so a
 * caller that loses the race fails loudly on startup or retries. A server of this process
 * does not release it at all: `listenOnFirstFree` binds the server itself (any outgoing
 * connection of the machine may take a port of the ephemeral range in the gap).
 */
import { createServer, type Server } from 'node:net';

/** Binds `port` (0: any) on `host` and releases it: the port bound, or undefined when it could not. */
function tryBind(host: string, port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen({ host, port, exclusive: true }, () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : undefined));
    });
  });
}

/** A TCP port that is free on 127.0.0.1 right now (from the ephemeral range: the kernel picks it). */
export async function freeLoopbackPort(): Promise<number> {
  const port = await tryBind('127.0.0.1', 0);
  if (port === undefined) throw new Error('could not bind a free port on 127.0.0.1');
  return port;
}

/** `count` distinct free ports (each one is held until all are picked). */
export async function freeLoopbackPorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freeLoopbackPort());
  return [...ports];
}

/** A port free on every one of the addresses (a lab's hosts share one port). */
export async function freePortOnAll(ips: readonly string[]): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await tryBind(ips[0] ?? '127.0.0.1', 0);
    if (port === undefined) continue;
    const free = await Promise.all(ips.slice(1).map((ip) => tryBind(ip, port)));
    if (free.every((p) => p === port)) return port;
  }
  throw new Error(`no port free on all of ${ips.join(', ')}`);
}

/**
 * Makes `server` listen on `host` at the first port from `from` (0: any) that it can bind,
 * trying `span` ports upward: the bound port. No gap between finding the port and binding it.
 */
export async function listenOnFirstFree(
  server: Server,
  host: string,
  from: number,
  span = 100,
): Promise<number> {
  const last = from === 0 ? 0 : Math.min(from + span - 1, 65535);
  for (let port = from; port <= last; port++) {
    const bound = await new Promise<boolean>((resolve, reject) => {
      const onError = (error: NodeJS.ErrnoException) => {
        server.off('listening', onListening);
        if (error.code === 'EADDRINUSE' && port < last) resolve(false);
        else reject(error);
      };
      const onListening = () => {
        server.off('error', onError);
        resolve(true);
      };
      server.once('error', onError);
      server.once('listening', onListening);
      server.listen({ host, port, exclusive: true });
    });
    if (bound) {
      const address = server.address();
      if (typeof address === 'object' && address) return address.port;
    }
  }
  throw new Error(`no free port on ${host} between ${from} and ${last}`);
}

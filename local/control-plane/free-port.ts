import { createServer } from 'node:net';

/**
 * A TCP port that is free on 127.0.0.1 right now: the kernel picks it, we release it and the
 * caller binds it a moment later. Ports come from the ephemeral range, so a clash with another
 * process in that moment is unlikely; callers that lose the race fail loudly on startup.
 */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not read the port the kernel picked'));
      });
    });
  });
}

/** `count` distinct free ports (each one is held until all are picked). */
export async function freeLoopbackPorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freeLoopbackPort());
  return [...ports];
}

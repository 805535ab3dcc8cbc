import { createServer } from 'node:net';

/** Whether `port` can be bound on `host` right now. */
function canBind(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** The first port from `from` (inclusive) that is free on `host`, trying `span` ports. */
export async function firstFreePort(host: string, from: number, span = 100): Promise<number> {
  for (let port = from; port < from + span && port <= 65535; port++)
    if (await canBind(host, port)) return port;
  throw new Error(`no free port on ${host} between ${from} and ${from + span - 1}`);
}

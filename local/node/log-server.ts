import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import type { Server } from 'node:https';
import { createServer } from 'node:https';
import type { ServerResponse } from 'node:http';

/**
 * The kubelet's read-only API as far as `kubectl logs` needs it:
 * GET /containerLogs/<namespace>/<pod>/<container>[?previous=true&follow=true&tailLines=N&limitBytes=N],
 * over HTTPS on 127.0.0.1, for clients whose certificate the control plane's CA signed (that is
 * kube-apiserver's --kubelet-client-certificate). Everything else is 404.
 */
export interface LogSource {
  /** The container's log file and whether it still runs; undefined when the pod or container is unknown. */
  find(
    namespace: string,
    pod: string,
    container: string,
    previous: boolean,
  ): { path?: string; running: boolean } | undefined;
}

export interface LogServerOptions {
  port: number;
  certFile: string;
  keyFile: string;
  /** Client certificates must chain to it. */
  clientCaFile: string;
  source: LogSource;
}

function tail(text: string, lines: number): string {
  const all = text.split('\n');
  const trailing = all[all.length - 1] === '' ? all.pop() : undefined;
  return all.slice(-lines).join('\n') + (trailing === '' ? '\n' : '');
}

function follow(path: string, res: ServerResponse, running: () => boolean, from: number): void {
  let offset = from;
  const pump = () => {
    const size = existsSync(path) ? statSync(path).size : offset;
    if (size > offset) {
      const stream = createReadStream(path, { start: offset, end: size - 1 });
      offset = size;
      stream.on('end', schedule);
      stream.pipe(res, { end: false });
      return;
    }
    if (!running()) return res.end();
    schedule();
  };
  const timer: { id?: NodeJS.Timeout } = {};
  const schedule = () => {
    timer.id = setTimeout(pump, 250);
  };
  res.on('close', () => clearTimeout(timer.id));
  pump();
}

export function startLogServer(options: LogServerOptions): Promise<Server> {
  const server = createServer(
    {
      cert: readFileSync(options.certFile),
      key: readFileSync(options.keyFile),
      ca: readFileSync(options.clientCaFile),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const url = new URL(req.url ?? '/', 'https://node');
      if (url.pathname === '/healthz') return void res.end('ok');
      const match = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
      if (req.method !== 'GET' || !match) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        return void res.end(`this node serves /containerLogs only (${req.method} ${url.pathname})\n`);
      }
      const [namespace, pod, container] = match.slice(1).map(decodeURIComponent) as [string, string, string];
      const previous = url.searchParams.get('previous') === 'true';
      const found = options.source.find(namespace, pod, container, previous);
      if (!found?.path || !existsSync(found.path)) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        const what = found
          ? previous
            ? 'has no previous run'
            : 'has not started yet'
          : 'is not on this node';
        return void res.end(`container "${container}" in pod "${namespace}/${pod}" ${what}\n`);
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      const tailLines = url.searchParams.get('tailLines');
      const limitBytes = Number(url.searchParams.get('limitBytes') ?? '0');
      let text = readFileSync(found.path, 'utf8');
      if (tailLines !== null) text = tail(text, Number(tailLines));
      if (limitBytes > 0) text = Buffer.from(text).subarray(0, limitBytes).toString('utf8');
      if (url.searchParams.get('follow') === 'true' && !previous) {
        res.write(text);
        const path = found.path;
        return follow(
          path,
          res,
          () => options.source.find(namespace, pod, container, false)?.running ?? false,
          statSync(path).size,
        );
      }
      res.end(text);
    },
  );
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve(server));
  });
}

import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** Status code and body of one GET, with a short timeout; never follows redirects. */
export function probe(
  url: string,
  options: { ca?: string | Buffer; token?: string; timeoutMs?: number; insecure?: boolean } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      target,
      {
        method: 'GET',
        ca: options.ca,
        // Only for self-signed health ports of our own children, never for data.
        rejectUnauthorized: !options.insecure,
        headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
        timeout: options.timeoutMs ?? 2000,
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    // The socket timeout covers idle sockets only; this one covers the whole exchange.
    const timer = setTimeout(() => req.destroy(new Error(`GET ${url} timed out`)), options.timeoutMs ?? 2000);
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.on('close', () => clearTimeout(timer));
    req.end();
  });
}

/** etcd answers {"health":"true"} on /health once it serves clients. */
export async function etcdHealthy(clientUrl: string): Promise<boolean> {
  const { status, body } = await probe(`${clientUrl}/health`);
  if (status !== 200) throw new Error(`etcd /health answered ${status}: ${body.slice(0, 200)}`);
  return (JSON.parse(body) as { health?: string }).health === 'true';
}

/** kube-apiserver answers 200 on /readyz once every post-start hook (RBAC bootstrap, CRDs) ran. */
export async function apiserverReady(server: string, ca: string, token: string): Promise<boolean> {
  const { status, body } = await probe(`${server}/readyz`, { ca, token });
  if (status !== 200) throw new Error(`/readyz answered ${status}: ${body.slice(-300)}`);
  return true;
}

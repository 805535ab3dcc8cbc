/** Raw HTTP for hostile requests: any header set, any body, no client-side validation of the event. */
import http from 'node:http';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

/** Header values a conforming HTTP client can send: visible ASCII (others become `?`). */
export const headerSafe = (value: string) => value.replace(/[^\x20-\x7e]/g, '?').trim();

export function rawPost(
  url: string,
  headers: Record<string, string>,
  body: string | Buffer,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers, agent }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

export async function rawGet(url: string): Promise<number> {
  const response = await fetch(url);
  await response.arrayBuffer();
  return response.status;
}

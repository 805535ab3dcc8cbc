import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFunctionServer } from '../../../shared/server/function-server.js';
import { sendType, testFunction, untouchableKubeConfig, capturingLogger } from './test-function.js';
import { startRecordingSink } from './recording-sink.js';

const traceId = '0af7651916cd43dd8448eb211c80319c';
const traceparent = `00-${traceId}-b7ad6b7169203331-01`;

async function serverWithEnv(env: Record<string, string>) {
  return startFunctionServer({
    definition: testFunction({ contexts: [], events: [] }),
    host: '127.0.0.1',
    port: 0,
    kubeConfig: untouchableKubeConfig,
    env,
    log: capturingLogger().log,
    processMetrics: false,
  });
}

function sendRequest(url: string, count: number) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'ce-specversion': '1.0',
      'ce-id': 'ping-1',
      'ce-source': '/test',
      'ce-type': sendType,
      'content-type': 'application/json',
      traceparent,
    },
    body: JSON.stringify({ count }),
  });
}

describe('context.send()', () => {
  it('posts to K_SINK in binary mode, continuing the trace', async () => {
    const sink = await startRecordingSink([{ status: 202 }]);
    const server = await serverWithEnv({ K_SINK: sink.url });
    try {
      const response = await sendRequest(server.url, 2);
      expect(response.status).toBe(204);
      expect(sink.requests).toHaveLength(2);
      for (const [index, request] of sink.requests.entries()) {
        expect(request.headers['ce-type']).toBe('test.sent');
        expect(JSON.parse(request.body.toString())).toEqual({ index });
        expect(request.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
        expect(request.headers['ce-traceparent']).toBe(request.headers.traceparent);
      }
    } finally {
      await server.close();
      await sink.close();
    }
  });

  it('falls back to BROKER_URL and retries a 503 from it', async () => {
    const sink = await startRecordingSink([{ status: 503 }, { status: 202 }]);
    const server = await serverWithEnv({ BROKER_URL: sink.url });
    try {
      const response = await sendRequest(server.url, 1);
      expect(response.status).toBe(204);
      expect(sink.requests).toHaveLength(2);
    } finally {
      await server.close();
      await sink.close();
    }
  });

  it('turns a refusal by the sink into a transient error (503)', async () => {
    const sink = await startRecordingSink([{ status: 500 }]);
    const server = await serverWithEnv({ K_SINK: sink.url });
    try {
      const response = await sendRequest(server.url, 1);
      expect(response.status).toBe(503);
      expect(((await response.json()) as { error: { reason: string } }).error.reason).toBe('SinkRejected');
    } finally {
      await server.close();
      await sink.close();
    }
  });

  it('fails with NoSinkConfigured when there is no sink', async () => {
    const server = await serverWithEnv({});
    try {
      const response = await sendRequest(server.url, 1);
      expect(response.status).toBe(500);
      expect(((await response.json()) as { error: { reason: string } }).error.reason).toBe(
        'NoSinkConfigured',
      );
    } finally {
      await server.close();
    }
  });

  it("sends SINK_TOKEN_FILE's token as a bearer token, read again for each event (Knative renews it)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sink-token-'));
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'first-token\n');
    // The first POST is answered only after the file changed: the second event reads it anew.
    const sink = await startRecordingSink([
      { status: 202, beforeAnswer: () => writeFile(tokenFile, 'renewed-token') },
      { status: 202 },
    ]);
    const server = await serverWithEnv({ K_SINK: sink.url, SINK_TOKEN_FILE: tokenFile });
    try {
      expect((await sendRequest(server.url, 2)).status).toBe(204);
      expect(sink.requests.map((r) => r.headers.authorization)).toEqual([
        'Bearer first-token',
        'Bearer renewed-token',
      ]);
    } finally {
      await server.close();
      await sink.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('sends no Authorization header when the token file does not exist (OIDC off)', async () => {
    const sink = await startRecordingSink([{ status: 202 }]);
    const server = await serverWithEnv({ K_SINK: sink.url, SINK_TOKEN_FILE: '/nonexistent/oidc/token' });
    try {
      expect((await sendRequest(server.url, 1)).status).toBe(204);
      expect(sink.requests).toHaveLength(1);
      expect(sink.requests[0]!.headers.authorization).toBeUndefined();
    } finally {
      await server.close();
      await sink.close();
    }
  });

  it('refuses to start with a K_SINK that is not a URL', async () => {
    await expect(serverWithEnv({ K_SINK: 'broker' })).rejects.toMatchObject({
      reason: 'InvalidConfig',
      message: expect.stringContaining('K_SINK'),
    });
  });
});

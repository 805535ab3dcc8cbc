import http from 'node:http';
import net from 'node:net';
import {
  createAgents,
  destroyAgents,
  postMessage,
  type Agents,
  type SendOptions,
  type SendOutcome,
} from '../../../local/broker/http-sender.js';

/**
 * The broker's sender (Node's http client with keep-alive agents) against real servers on
 * 127.0.0.1: one Node http server for the ordinary case, and `node:net` servers that write
 * scripted raw bytes so that every framing edge case (chunk extensions, trailers, bodies until
 * close, interim responses, one byte at a time) is exactly what the sender sees. What is asserted
 * is what the broker relies on: outcomes (never a rejection), connection reuse, limits, shutdown.
 */

/** One request as a raw server read it: the head (request line and headers) and the body bytes. */
interface RawRequest {
  head: string;
  body: Buffer;
}
interface RequestInfo {
  /** Which TCP connection (0-based, in accept order) carried it. */
  connection: number;
  /** Which request on the whole server (0-based). */
  index: number;
}
type RawHandler = (socket: net.Socket, request: RawRequest, info: RequestInfo) => void;

interface RawServer {
  url(path?: string): URL;
  /** Every connection accepted, in order ('connection' events). */
  readonly sockets: net.Socket[];
  readonly requests: RawRequest[];
  /** Resolves when the server side of connection `index` has closed. */
  closed(index: number): Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];
let agents: Agents;

beforeEach(() => {
  agents = createAgents();
});

afterEach(async () => {
  destroyAgents(agents);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
  });
}

/**
 * A raw TCP server that reads each request (head, then Content-Length bytes of body) and hands it
 * to `handler`, which writes whatever bytes it likes. Requests on one connection are read in turn.
 */
async function rawServer(handler: RawHandler): Promise<RawServer> {
  const sockets: net.Socket[] = [];
  const closes: Promise<void>[] = [];
  const requests: RawRequest[] = [];
  const server = net.createServer((socket) => {
    const connection = sockets.push(socket) - 1;
    closes.push(new Promise((resolve) => socket.once('close', () => resolve())));
    socket.setNoDelay(true);
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    socket.on('data', (data: Buffer) => {
      buffered = Buffer.concat([buffered, data]);
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.toString('latin1', 0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const request = { head, body: Buffer.from(buffered.subarray(end + 4, end + 4 + length)) };
        buffered = buffered.subarray(end + 4 + length);
        const index = requests.push(request) - 1;
        handler(socket, request, { connection, index });
      }
    });
  });
  const port = await listen(server);
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    url: (path = '/') => new URL(`http://127.0.0.1:${port}${path}`),
    sockets,
    requests,
    closed: (index) => closes[index]!,
  };
}

/** A raw server answering every request with the same bytes. */
const answering = (response: string | Buffer) =>
  rawServer((socket) => {
    socket.write(response);
  });

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Writes `bytes` one at a time, alternating setImmediate and 1 ms gaps so reads see pieces. */
async function dribble(socket: net.Socket, bytes: Buffer): Promise<void> {
  for (let i = 0; i < bytes.length; i++) {
    if (socket.destroyed) return;
    socket.write(bytes.subarray(i, i + 1));
    if (i % 4 === 3) await sleep(1);
    else await tick();
  }
}

const body = (text: string) => Buffer.from(text);

/** Narrows an outcome to a response, with the error message in the failure if it is not one. */
function response(outcome: SendOutcome) {
  if (outcome.kind !== 'response') throw new Error(`expected a response, got error: ${outcome.message}`);
  return outcome;
}

/** POSTs through the test's agents. */
const post = (
  url: URL,
  headers: Record<string, string>,
  payload: Buffer,
  options: Omit<SendOptions, 'headers' | 'body'> = {},
) => postMessage(url, { headers, body: payload, ...options }, agents);

const aborted = { kind: 'error', message: 'delivery aborted: broker is shutting down' };

const ok = (text: string, extra = '') =>
  `HTTP/1.1 200 OK\r\n${extra}Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;

describe('postMessage: requests', () => {
  it('POSTs method, path and query, Host, our headers and the exact body bytes to a Node http server', async () => {
    let seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: Buffer } | undefined;
    const server = http.createServer((request, reply) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        seen = {
          method: request.method,
          url: request.url,
          headers: request.headers,
          body: Buffer.concat(chunks),
        };
        reply.writeHead(202);
        reply.end();
      });
    });
    const port = await listen(server);
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    // Bytes that a utf-8 round trip would mangle: the body must arrive byte for byte.
    const payload = Buffer.from([0x7b, 0x00, 0xff, 0x80, 0xc3, 0xa9, 0x0d, 0x0a, 0x7d, 0xe2, 0x82, 0xac]);

    const outcome = response(
      await post(
        new URL(`http://127.0.0.1:${port}/a/path?x=1&y=two`),
        { 'ce-id': 'e1', 'Content-Type': 'application/cloudevents+json', 'x-latin': 'caf\u00e9' },
        payload,
      ),
    );

    expect(outcome.status).toBe(202);
    expect(outcome.body.length).toBe(0);
    expect(seen).toBeDefined();
    expect(seen!.method).toBe('POST');
    expect(seen!.url).toBe('/a/path?x=1&y=two');
    expect(seen!.headers.host).toBe(`127.0.0.1:${port}`);
    expect(seen!.headers['ce-id']).toBe('e1');
    expect(seen!.headers['content-type']).toBe('application/cloudevents+json');
    expect(seen!.headers['x-latin']).toBe('caf\u00e9');
    expect(seen!.headers['content-length']).toBe(String(payload.length));
    expect(seen!.body.equals(payload)).toBe(true);
  });

  it('sends a body larger than the inline limit byte for byte', async () => {
    const server = await answering(ok('got it'));
    const payload = Buffer.alloc(200_000);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 7919) % 256;

    const outcome = response(await post(server.url('/big'), {}, payload));

    expect(outcome.status).toBe(200);
    expect(outcome.body.toString()).toBe('got it');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.head).toMatch(/\r\ncontent-length: 200000\r\n/i);
    expect(server.requests[0]!.body.equals(payload)).toBe(true);
  });

  it('sends credentials in the URL as Basic authorization', async () => {
    const server = await answering(ok(''));
    const url = server.url('/');
    url.username = 'us%40er';
    url.password = 'p%3Ass';

    response(await post(url, {}, body('x')));

    const expected = Buffer.from('us@er:p:ss').toString('base64');
    expect(server.requests[0]!.head).toContain(`\r\nAuthorization: Basic ${expected}\r\n`);
  });
});

describe('postMessage: keep-alive', () => {
  it('reuses one connection for sequential posts to the same origin', async () => {
    let connections = 0;
    const server = http.createServer((_request, reply) => reply.end('ok'));
    server.on('connection', () => connections++);
    const port = await listen(server);
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const url = new URL(`http://127.0.0.1:${port}/`);

    const first = response(await post(url, {}, body('1')));
    const second = response(await post(url, {}, body('2')));

    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.body.toString()).toBe('ok');
    expect(connections).toBe(1);
  });

  it('keeps one idle connection per origin for posts alternating between two origins', async () => {
    const one = await answering(ok('one'));
    const two = await answering(ok('two'));

    for (let i = 0; i < 3; i++) {
      expect(response(await post(one.url(`/r${i}`), {}, body(`n${i}`))).body.toString()).toBe('one');
      expect(response(await post(two.url(`/r${i}`), {}, body(`n${i}`))).body.toString()).toBe('two');
    }

    expect(one.sockets).toHaveLength(1);
    expect(two.sockets).toHaveLength(1);
    expect(one.requests.map((r) => r.body.toString())).toEqual(['n0', 'n1', 'n2']);
    expect(one.requests.map((r) => r.head.split('\r\n')[0])).toEqual([
      'POST /r0 HTTP/1.1',
      'POST /r1 HTTP/1.1',
      'POST /r2 HTTP/1.1',
    ]);
  });

  it('opens a new connection after a response with Connection: close', async () => {
    const server = await rawServer((socket, _request, { index }) => {
      if (index === 1) socket.end(ok('bye', 'Connection: close\r\n'));
      else socket.write(ok('hi'));
    });

    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push(response(await post(server.url(), {}, body(''))));

    expect(outcomes.map((o) => o.body.toString())).toEqual(['hi', 'bye', 'hi']);
    expect(outcomes[1]!.headers.connection).toBe('close');
    expect(server.sockets).toHaveLength(2);
    // The first two requests shared the first connection; the third had a new one.
    await server.closed(0);
  });

  it('posts again on a new connection after the server closed an idle kept-alive one', async () => {
    const server = await rawServer((socket, _request, { connection }) => {
      socket.write(ok(`c${connection}`));
      // Close the connection once the response is out: the client holds it idle meanwhile.
      if (connection === 0) setTimeout(() => socket.end(), 20);
    });

    expect(response(await post(server.url(), {}, body('1'))).body.toString()).toBe('c0');
    // The server side closes only once the client has answered its FIN, i.e. has seen the close.
    await server.closed(0);
    await sleep(100);
    const second = response(await post(server.url(), {}, body('2')));

    expect(second.body.toString()).toBe('c1');
    expect(server.sockets).toHaveLength(2);
  });
});

describe('postMessage: response framing', () => {
  it('reads a Content-Length body and keeps the connection', async () => {
    const server = await answering(ok('hello world', 'Content-Type: text/plain\r\n'));

    const first = response(await post(server.url(), {}, body('a')));
    const second = response(await post(server.url(), {}, body('b')));

    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('text/plain');
    expect(first.headers['content-length']).toBe('11');
    expect(first.body.toString()).toBe('hello world');
    expect(second.body.toString()).toBe('hello world');
    expect(server.sockets).toHaveLength(1);
  });

  it('reads a chunked body with a chunk extension and trailers, and keeps the connection', async () => {
    const server = await answering(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n' +
        '5;name="value"\r\nhello\r\n6\r\n world\r\nA;ext\r\n, chunked!\r\n0\r\nX-Checksum: abc\r\nX-More: 1\r\n\r\n',
    );

    const first = response(await post(server.url(), {}, body('a')));
    const second = response(await post(server.url(), {}, body('b')));

    expect(first.status).toBe(200);
    expect(first.headers['transfer-encoding']).toBe('chunked');
    expect(first.body.toString()).toBe('hello world, chunked!');
    expect(second.body.toString()).toBe('hello world, chunked!');
    expect(server.sockets).toHaveLength(1);
  });

  it('reads a body without length until the server closes (HTTP/1.0), then uses a new connection', async () => {
    const server = await rawServer((socket) => {
      socket.write('HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil ');
      setTimeout(() => socket.end('the end'), 10);
    });

    const first = response(await post(server.url(), {}, body('a')));
    const second = response(await post(server.url(), {}, body('b')));

    expect(first.status).toBe(200);
    expect(first.body.toString()).toBe('until the end');
    expect(second.body.toString()).toBe('until the end');
    expect(server.sockets).toHaveLength(2);
  });

  it.each([
    ['HTTP/1.0 without keep-alive', 'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok', 2],
    [
      'HTTP/1.0 with Connection: keep-alive',
      'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok',
      1,
    ],
    [
      'HTTP/1.1 with Connection: close',
      'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok',
      2,
    ],
  ])(
    'reuses a connection after a Content-Length response only if kept alive (%s)',
    async (_, bytes, count) => {
      const server = await answering(bytes);

      const first = response(await post(server.url(), {}, body('a')));
      if (count === 2) await server.closed(0);
      const second = response(await post(server.url(), {}, body('b')));

      expect([first.body.toString(), second.body.toString()]).toEqual(['ok', 'ok']);
      expect(server.sockets).toHaveLength(count);
    },
  );

  it('reads a 304 as bodiless even with a Content-Length', async () => {
    const server = await answering('HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n');

    const first = response(await post(server.url(), {}, body('a')));
    const second = response(await post(server.url(), {}, body('b')));

    expect(first.status).toBe(304);
    expect(first.body.length).toBe(0);
    expect(second.status).toBe(304);
    expect(server.sockets).toHaveLength(1);
  });

  it('reads a 204 without a body and keeps the connection', async () => {
    const server = await answering('HTTP/1.1 204 No Content\r\nX-Request: done\r\n\r\n');

    const first = response(await post(server.url(), {}, body('a')));
    const second = response(await post(server.url(), {}, body('b')));

    expect(first.status).toBe(204);
    expect(first.headers['x-request']).toBe('done');
    expect(first.body.length).toBe(0);
    expect(second.status).toBe(204);
    expect(server.sockets).toHaveLength(1);
  });

  it('skips a 100 Continue interim response, in the same write as the real one or apart', async () => {
    const server = await rawServer((socket, _request, { index }) => {
      if (index === 0) socket.write('HTTP/1.1 100 Continue\r\n\r\n' + ok('done', 'X-Final: yes\r\n'));
      else {
        socket.write('HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n');
        setTimeout(() => socket.write(ok('done too')), 20);
      }
    });

    const first = response(await post(server.url(), {}, body('a')));
    const second = response(await post(server.url(), {}, body('b')));

    expect(first.status).toBe(200);
    expect(first.headers['x-final']).toBe('yes');
    expect(first.body.toString()).toBe('done');
    expect(second.status).toBe(200);
    expect(second.headers['x-interim']).toBeUndefined();
    expect(second.body.toString()).toBe('done too');
    expect(server.sockets).toHaveLength(1);
  });

  it('reads a Content-Length response delivered one byte at a time', async () => {
    const bytes = Buffer.from(ok('piece by piece', 'Content-Type: text/plain\r\n'));
    const server = await rawServer((socket) => void dribble(socket, bytes));

    const first = response(await post(server.url(), {}, body('a')));
    const second = response(await post(server.url(), {}, body('b')));

    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('text/plain');
    expect(first.body.toString()).toBe('piece by piece');
    expect(second.body.toString()).toBe('piece by piece');
    expect(server.sockets).toHaveLength(1);
  });

  it('reads a chunked response delivered one byte at a time', async () => {
    const bytes = Buffer.from(
      'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n' +
        '6;ext=1\r\npiece \r\n2\r\nby\r\n7\r\n piece!\r\n0\r\nX-Trailer: t\r\n\r\n',
    );
    const server = await rawServer((socket) => void dribble(socket, bytes));

    const first = response(await post(server.url(), {}, body('a')));
    const second = response(await post(server.url(), {}, body('b')));

    expect(first.status).toBe(201);
    expect(first.body.toString()).toBe('piece by piece!');
    expect(second.body.toString()).toBe('piece by piece!');
    expect(server.sockets).toHaveLength(1);
  });

  it('merges duplicate response headers as Node does', async () => {
    const server = await answering(
      'HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-Dup: one\r\nset-cookie: b=2; Path=/\r\nX-Dup: two\r\n' +
        'Content-Type: text/plain\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n',
    );

    const { headers } = response(await post(server.url(), {}, body('')));

    expect(headers['set-cookie']).toEqual(['a=1', 'b=2; Path=/']);
    expect(headers['x-dup']).toBe('one, two');
    expect(headers['content-type']).toBe('text/plain');
  });

  it('cuts a body larger than maxResponseBytes and still completes, reading the rest', async () => {
    const big = Buffer.alloc(1024 * 1024, 'x');
    const server = await rawServer((socket, _request, { index }) => {
      if (index === 0) {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${big.length}\r\n\r\n`);
        for (let at = 0; at < big.length; at += 16 * 1024) socket.write(big.subarray(at, at + 16 * 1024));
      } else socket.write(ok('after'));
    });
    const limit = 1000;

    const first = response(await post(server.url(), {}, body('a'), { maxResponseBytes: limit }));
    const second = response(await post(server.url(), {}, body('b'), { maxResponseBytes: limit }));

    expect(first.status).toBe(200);
    expect(first.body.length).toBeGreaterThan(0);
    // At most one socket read (64 KiB) past the limit.
    expect(first.body.length).toBeLessThanOrEqual(limit + 64 * 1024);
    expect(first.body.equals(big.subarray(0, first.body.length))).toBe(true);
    // The dropped rest was read to its end: the connection was still good for the next request.
    expect(second.body.toString()).toBe('after');
    expect(server.sockets).toHaveLength(1);
  });
});

describe('postMessage: errors', () => {
  it('fails with the connect error when the connection is refused', async () => {
    const closedServer = net.createServer();
    const port = await listen(closedServer);
    await new Promise<void>((resolve) => closedServer.close(() => resolve()));

    const outcome = await post(new URL(`http://127.0.0.1:${port}/`), {}, body('a'));

    expect(outcome.kind).toBe('error');
    expect(outcome.kind === 'error' && outcome.message).toMatch(/ECONNREFUSED/);
  });

  it("fails with 'socket hang up' when the server closes before answering", async () => {
    const server = await rawServer((socket) => socket.end());

    const outcome = await post(server.url(), {}, body('a'));

    expect(outcome).toEqual({ kind: 'error', message: 'socket hang up' });
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    ['Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part of it'],
    ['chunked', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nonly part'],
    ['chunked, before the last chunk', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nsome\r\n'],
  ])(
    "fails with 'response aborted before its end' when the server closes mid-body (%s)",
    async (_, bytes) => {
      const server = await rawServer((socket) => {
        socket.write(bytes);
        setTimeout(() => socket.end(), 10);
      });

      const outcome = await post(server.url(), {}, body('a'));

      expect(outcome).toEqual({ kind: 'error', message: 'response aborted before its end' });
    },
  );

  it.each([
    ['a malformed status line', 'HTTP/1.1 OK\r\nContent-Length: 0\r\n\r\n'],
    ['a malformed response header', 'HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 0\r\n\r\n'],
    ['a malformed Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\n'],
    ['a malformed chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    [
      'a chunk longer than its size',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY\r\n0\r\n\r\n',
    ],
    ['a response head too large', `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(20 * 1024)}`],
  ])('fails on %s with the parse error, and discards the connection', async (_, bytes) => {
    const server = await answering(bytes);

    const outcome = await post(server.url(), {}, body('a'));

    expect(outcome.kind).toBe('error');
    expect(outcome.kind === 'error' && outcome.message).toMatch(/^Parse Error: /);
    await server.closed(0);
  });

  it('fails after timeoutMs when the server never answers, and discards the connection', async () => {
    const server = await rawServer(() => {});

    const outcome = await post(server.url(), {}, body('a'), { timeoutMs: 150 });

    expect(outcome).toEqual({ kind: 'error', message: 'timeout after 150 ms' });
    expect(server.requests).toHaveLength(1);
    await server.closed(0);
  });

  it('refuses a header value containing CR LF without sending anything', async () => {
    const server = await answering(ok('fine'));

    const outcome = await post(server.url(), { 'x-injected': 'a\r\nX-Evil: 1' }, body('a'));

    expect(outcome.kind).toBe('error');
    expect(outcome.kind === 'error' && outcome.message).toContain('Invalid character in header content');
    expect(server.sockets).toHaveLength(0);
    // A good request afterwards is the only thing the server ever sees.
    expect(response(await post(server.url(), { 'x-fine': 'b' }, body('b'))).body.toString()).toBe('fine');
    expect(server.sockets).toHaveLength(1);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.head).not.toMatch(/evil/i);
    expect(server.requests[0]!.body.toString()).toBe('b');
  });

  it('refuses an invalid header name without sending anything', async () => {
    const server = await answering(ok('fine'));

    const outcome = await post(server.url(), { 'bad name': 'v' }, body('a'));

    expect(outcome).toEqual({
      kind: 'error',
      message: 'Header name must be a valid HTTP token ["bad name"]',
    });
    await sleep(20);
    expect(server.sockets).toHaveLength(0);
  });
});

describe('postMessage: URL credentials', () => {
  it('resolves with an error, sending nothing, when they are not valid percent-encoding', async () => {
    const server = await answering(ok('fine'));
    const url = server.url();
    url.username = '%zz';
    expect(url.username).toBe('%zz');

    const outcome = await post(url, {}, body('a'));

    expect(outcome).toEqual({ kind: 'error', message: 'URL credentials are not valid percent-encoding' });
    expect(server.sockets).toHaveLength(0);
  });
});

describe('postMessage: destroyAgents (shutdown)', () => {
  it('fails a request in flight at once, and every later one without sending it', async () => {
    const server = await rawServer(() => {});

    const inFlight = post(server.url(), {}, body('a'));
    await waitFor(() => server.requests.length === 1, 'the request to arrive');
    destroyAgents(agents);

    expect(await inFlight).toEqual(aborted);
    expect(await post(server.url(), {}, body('b'))).toEqual(aborted);
    await server.closed(0);
    expect(server.sockets).toHaveLength(1);
  });

  it('closes idle connections', async () => {
    const server = await answering(ok('ok'));

    response(await post(server.url(), {}, body('a')));
    destroyAgents(agents);

    await server.closed(0);
    expect(server.sockets).toHaveLength(1);
  });
});

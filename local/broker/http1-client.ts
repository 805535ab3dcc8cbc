import type { IncomingHttpHeaders } from 'node:http';
import net from 'node:net';

/**
 * A small keep-alive HTTP/1.1 client for the broker's deliveries to `http:` targets.
 *
 * Why not `http.request`: a delivery is one POST with a handful of headers, and on this path
 * Node's ClientRequest, Agent and IncomingMessage machinery cost about as much CPU as the
 * syscalls themselves; the broker hop's latency goal (no more than a direct POST) leaves no room
 * for it. This client writes the request head and a small body in one write, and parses the
 * response with a plain scanner. It does what the broker needs and no more: POST only, one
 * request per connection at a time (no pipelining), bodies by Content-Length, chunked or until
 * close, 1xx responses skipped, `Connection: close` honoured. Anything unexpected fails the
 * attempt (Knative's retry policy then applies) and discards the connection.
 */

/** What one POST produced: a response, or a connection-level failure (refused, reset, timeout). */
export type PostOutcome =
  | { kind: 'response'; status: number; headers: IncomingHttpHeaders; body: Buffer }
  | { kind: 'error'; message: string };

export interface PostOptions {
  /** Per-attempt timeout covering connect, request and response body. */
  timeoutMs?: number;
  /** Largest response body kept; the rest is read and dropped. */
  maxResponseBytes?: number;
}

/** Largest response head (status line and headers) accepted, as Node's default. */
export const maxHeadBytes = 16 * 1024;
/** Bodies up to this size go out in the same write as the head. */
const inlineBodyBytes = 16 * 1024;
/** Idle connections kept per origin; more are closed when they come back. */
const maxIdlePerOrigin = 256;

const invalidHeaderChar = /[^\t\x20-\x7e\x80-\xff]/;
const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers Node keeps only once (the first); others are joined with ", " like IncomingMessage does. */
const singleValued = new Set([
  'content-type',
  'content-length',
  'user-agent',
  'referer',
  'host',
  'authorization',
  'proxy-authorization',
  'if-modified-since',
  'if-unmodified-since',
  'from',
  'location',
  'max-forwards',
  'retry-after',
  'etag',
  'last-modified',
  'server',
  'age',
  'expires',
]);

export class Http1Pool {
  private readonly idle = new Map<string, Connection[]>();
  private readonly active = new Set<Exchange>();
  private closedReason: string | undefined;

  /** POSTs `body` to an `http:` URL; never rejects. */
  post(url: URL, headers: Readonly<Record<string, string>>, body: Buffer, options: PostOptions = {}) {
    return new Promise<PostOutcome>((resolve) => {
      if (this.closedReason !== undefined) {
        resolve({ kind: 'error', message: this.closedReason });
        return;
      }
      const head = requestHead(url, headers, body.length);
      if (typeof head !== 'string') {
        resolve(head);
        return;
      }
      const connection = this.takeIdle(url.host) ?? new Connection(this, url);
      const exchange = new Exchange(connection, resolve, options);
      this.active.add(exchange);
      exchange.start(head, body);
    });
  }

  /** Fails every request in flight with `reason`, closes every connection, refuses new requests. */
  destroy(reason: string): void {
    this.closedReason = reason;
    for (const exchange of [...this.active]) exchange.fail(reason);
    for (const connections of this.idle.values())
      for (const connection of connections) connection.socket.destroy();
    this.idle.clear();
  }

  /** @internal An exchange ended: its connection is reusable (keep) or to be discarded. */
  finished(exchange: Exchange, keep: boolean): void {
    this.active.delete(exchange);
    const { connection } = exchange;
    connection.exchange = undefined;
    if (!keep || this.closedReason !== undefined) {
      connection.socket.destroy();
      return;
    }
    let connections = this.idle.get(connection.origin);
    if (!connections) this.idle.set(connection.origin, (connections = []));
    if (connections.length >= maxIdlePerOrigin) connection.socket.destroy();
    else connections.push(connection);
  }

  /** @internal A connection closed or failed: it is no longer offered. */
  forget(connection: Connection): void {
    const connections = this.idle.get(connection.origin);
    const at = connections ? connections.indexOf(connection) : -1;
    if (at >= 0) connections!.splice(at, 1);
  }

  private takeIdle(origin: string): Connection | undefined {
    const connections = this.idle.get(origin);
    // Most recently used first: it is the least likely to have been closed by the server.
    let connection = connections?.pop();
    while (connection && (connection.socket.destroyed || !connection.socket.writable))
      connection = connections?.pop();
    return connection;
  }
}

/**
 * One keep-alive connection. Its listeners are attached once and hand the socket's events to
 * the exchange using it, if any; an idle connection that closes or fails leaves the pool.
 */
class Connection {
  readonly pool: Http1Pool;
  readonly socket: net.Socket;
  readonly origin: string;
  exchange: Exchange | undefined;

  constructor(pool: Http1Pool, url: URL) {
    this.pool = pool;
    this.origin = url.host;
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    this.socket = net.connect({ host, port: Number(url.port || 80), noDelay: true });
    this.socket.on('data', (data: Buffer) => this.exchange?.onData(data));
    this.socket.on('error', (error: Error) => {
      pool.forget(this);
      this.exchange?.fail(error.message);
    });
    this.socket.on('close', () => {
      pool.forget(this);
      this.exchange?.onClose();
    });
  }
}

/** The request line and headers, or an error outcome for a header Node would refuse too. */
function requestHead(
  url: URL,
  headers: Readonly<Record<string, string>>,
  length: number,
): string | PostOutcome {
  let head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n`;
  for (const name in headers) {
    const value = headers[name]!;
    if (!headerName.test(name))
      return { kind: 'error', message: `Invalid header name: ${JSON.stringify(name)}` };
    if (invalidHeaderChar.test(value))
      return { kind: 'error', message: `Invalid character in header content [${JSON.stringify(name)}]` };
    head += `${name}: ${value}\r\n`;
  }
  if (url.username || url.password) {
    let credentials: string;
    try {
      credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    } catch {
      // WHATWG URL keeps a bare '%' in userinfo as it is.
      return { kind: 'error', message: 'URL credentials are not valid percent-encoding' };
    }
    head += `Authorization: Basic ${Buffer.from(credentials).toString('base64')}\r\n`;
  }
  return `${head}Content-Length: ${length}\r\nConnection: keep-alive\r\n\r\n`;
}

/** Where the response body is: the parser's states. */
type BodyMode =
  { kind: 'length'; remaining: number } | { kind: 'chunked' } | { kind: 'until-close' } | { kind: 'none' };

/** One request and its response on one connection. */
class Exchange {
  private timer: NodeJS.Timeout | undefined;
  private done = false;
  /** Bytes not yet parsed (head, chunk framing). */
  private pending: Buffer | undefined;
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private keepAlive = true;
  private mode: BodyMode | undefined;
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  /** Chunked bodies: bytes left in the current chunk, or -1 while reading a size line. */
  private chunkLeft = -1;
  private inTrailers = false;

  constructor(
    readonly connection: Connection,
    private readonly resolve: (outcome: PostOutcome) => void,
    private readonly options: PostOptions,
  ) {}

  start(head: string, body: Buffer): void {
    const { socket } = this.connection;
    this.connection.exchange = this;
    if (this.options.timeoutMs !== undefined) {
      this.timer = setTimeout(
        () => this.fail(`timeout after ${this.options.timeoutMs} ms`),
        this.options.timeoutMs,
      );
    }
    if (body.length <= inlineBodyBytes) socket.write(head + body.toString('latin1'), 'latin1');
    else {
      socket.cork();
      socket.write(head, 'latin1');
      socket.write(body);
      socket.uncork();
    }
  }

  fail(message: string): void {
    this.end({ kind: 'error', message }, false);
  }

  onClose(): void {
    if (this.done) return;
    if (this.mode?.kind === 'until-close') this.complete(false);
    else this.fail(this.mode ? 'response aborted before its end' : 'socket hang up');
  }

  onData(data: Buffer): void {
    if (this.done) return;
    let input = this.pending ? Buffer.concat([this.pending, data]) : data;
    this.pending = undefined;
    while (input.length > 0 && !this.done) {
      if (!this.mode) {
        const consumed = this.readHead(input);
        if (consumed < 0) return; // head incomplete (kept in pending) or failed
        input = input.subarray(consumed);
        // Set by readHead unless the head was a 1xx (then the next head follows).
        const mode = this.mode as BodyMode | undefined;
        if (mode?.kind === 'none' || (mode?.kind === 'length' && mode.remaining === 0))
          this.complete(this.keepAlive && input.length === 0);
        continue;
      }
      input = this.readBody(input);
    }
  }

  /** Parses a response head at the start of `input`: bytes consumed, or -1. */
  private readHead(input: Buffer): number {
    const end = input.indexOf('\r\n\r\n');
    if (end < 0) {
      if (input.length > maxHeadBytes) this.fail('response head too large');
      else this.pending = input;
      return -1;
    }
    const lines = input.toString('latin1', 0, end).split('\r\n');
    const statusLine = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(lines[0]!);
    if (!statusLine) {
      this.fail('malformed response status line');
      return -1;
    }
    const minor = statusLine[1]!;
    const status = Number(statusLine[2]);
    const headers: IncomingHttpHeaders = {};
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) {
        this.fail('malformed response header');
        return -1;
      }
      addHeader(headers, line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const consumed = end + 4;
    // 1xx: an interim response (100 Continue, 103 Early Hints); the real one follows.
    if (status >= 100 && status < 200) return consumed;

    this.status = status;
    this.headers = headers;
    const connection = String(headers.connection ?? '').toLowerCase();
    this.keepAlive = minor === '1' ? !connection.includes('close') : connection.includes('keep-alive');
    const transferEncoding = headers['transfer-encoding'];
    const contentLength = headers['content-length'];
    if (status === 204 || status === 304) this.mode = { kind: 'none' };
    else if (transferEncoding !== undefined) {
      if (!/(^|,)\s*chunked\s*$/i.test(String(transferEncoding))) {
        // A body framed by a coding other than chunked ends with the connection.
        this.mode = { kind: 'until-close' };
        this.keepAlive = false;
      } else this.mode = { kind: 'chunked' };
    } else if (contentLength !== undefined) {
      if (!/^\d+$/.test(contentLength)) {
        this.fail('malformed Content-Length in response');
        return -1;
      }
      this.mode = { kind: 'length', remaining: Number(contentLength) };
    } else {
      this.mode = { kind: 'until-close' };
      this.keepAlive = false;
    }
    return consumed;
  }

  /** Takes body bytes from `input`; returns what is left (bytes after the response). */
  private readBody(input: Buffer): Buffer {
    const mode = this.mode!;
    if (mode.kind === 'until-close') {
      this.keep(input);
      return input.subarray(input.length);
    }
    if (mode.kind === 'length') {
      const take = Math.min(mode.remaining, input.length);
      this.keep(input.subarray(0, take));
      mode.remaining -= take;
      const rest = input.subarray(take);
      if (mode.remaining === 0) this.complete(this.keepAlive && rest.length === 0);
      return rest;
    }
    if (mode.kind === 'chunked') return this.readChunked(input);
    // 'none' completes in onData; bytes after a bodiless response mean a confused server.
    this.complete(false);
    return input.subarray(input.length);
  }

  private readChunked(input: Buffer): Buffer {
    while (input.length > 0 && !this.done) {
      if (this.chunkLeft > 0) {
        const take = Math.min(this.chunkLeft, input.length);
        this.keep(input.subarray(0, take));
        this.chunkLeft -= take;
        input = input.subarray(take);
        if (this.chunkLeft === 0) this.chunkLeft = -2; // the CRLF after the data
        continue;
      }
      const lineEnd = input.indexOf('\r\n');
      if (lineEnd < 0) {
        if (input.length > maxHeadBytes) this.fail('malformed chunked response');
        else this.pending = input;
        return input.subarray(input.length);
      }
      const line = input.toString('latin1', 0, lineEnd);
      input = input.subarray(lineEnd + 2);
      if (this.chunkLeft === -2) {
        if (line !== '') this.fail('malformed chunked response');
        this.chunkLeft = -1;
      } else if (this.inTrailers) {
        // Trailers end with an empty line; their contents are ignored.
        if (line === '') this.complete(this.keepAlive && input.length === 0);
      } else {
        const size = /^([0-9a-fA-F]{1,8})\s*(;.*)?$/.exec(line);
        if (!size) this.fail('malformed chunked response');
        else {
          const length = parseInt(size[1]!, 16);
          if (length === 0) this.inTrailers = true;
          else this.chunkLeft = length;
        }
      }
    }
    return input;
  }

  private keep(bytes: Buffer): void {
    const limit = this.options.maxResponseBytes ?? 10 * 1024 * 1024;
    if (this.kept >= limit || bytes.length === 0) return;
    // A socket's data chunks are fresh buffers, so a view is enough.
    this.chunks.push(bytes);
    this.kept += bytes.length;
  }

  private complete(reusable: boolean): void {
    this.end(
      {
        kind: 'response',
        status: this.status,
        headers: this.headers,
        body: this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks),
      },
      reusable,
    );
  }

  private end(outcome: PostOutcome, reusable: boolean): void {
    if (this.done) return;
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    this.connection.pool.finished(this, reusable);
    this.resolve(outcome);
  }
}

function addHeader(headers: IncomingHttpHeaders, name: string, value: string): void {
  const existing = headers[name];
  if (existing === undefined) headers[name] = name === 'set-cookie' ? [value] : value;
  else if (name === 'set-cookie') (existing as string[]).push(value);
  else if (!singleValued.has(name)) headers[name] = `${existing as string}, ${value}`;
}

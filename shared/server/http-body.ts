import type { IncomingMessage } from 'node:http';

export type BodyResult =
  | { kind: 'complete'; body: Buffer }
  /** Over `limit`. `drained` is false when the rest was not read and the connection must close. */
  | { kind: 'tooLarge'; received: number; drained: boolean }
  /** The client went away before the end. */
  | { kind: 'aborted' };

/**
 * Reads a request body up to `limit` bytes. Past the limit the rest is read and thrown away
 * (so the client gets its 400 instead of a reset connection), up to `discardLimit` bytes; past
 * that, or when Content-Length already says so, reading stops and the caller closes the
 * connection after answering.
 */
export function readBody(
  request: IncomingMessage,
  limit: number,
  discardLimit = limit * 16,
): Promise<BodyResult> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > discardLimit) {
    request.pause();
    return Promise.resolve({ kind: 'tooLarge', received: 0, drained: false });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const settle = (result: BodyResult) => {
      if (settled) return;
      settled = true;
      request.off('data', onData);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received <= limit) chunks.push(chunk);
      else if (received > discardLimit) {
        request.pause();
        settle({ kind: 'tooLarge', received, drained: false });
      }
    };
    request.on('data', onData);
    request.once('end', () =>
      settle(
        received > limit
          ? { kind: 'tooLarge', received, drained: true }
          : { kind: 'complete', body: Buffer.concat(chunks, received) },
      ),
    );
    request.once('error', () => settle({ kind: 'aborted' }));
    request.once('close', () => {
      if (!request.complete) settle({ kind: 'aborted' });
    });
  });
}

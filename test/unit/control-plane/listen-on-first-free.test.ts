/**
 * listenOnFirstFree binds the server itself, trying ports upward while they are taken: the
 * embedded stack's broker and live view no longer release a probed port and bind it later (a
 * gap in which any outgoing connection of the machine could take it: EADDRINUSE in CI).
 */
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { listenOnFirstFree } from '../../../local/control-plane/free-port.js';

const servers: Server[] = [];
const server = () => {
  const created = createServer();
  servers.push(created);
  return created;
};
afterEach(async () => {
  await Promise.all(
    servers
      .splice(0)
      .map((s) => new Promise<void>((resolve) => (s.listening ? s.close(() => resolve()) : resolve()))),
  );
});

describe('listenOnFirstFree', () => {
  it('binds the first port it can and passes over the ones other servers hold', async () => {
    const first = await listenOnFirstFree(server(), '127.0.0.1', 0);
    expect(first).toBeGreaterThan(0);
    // `first` is held: the next server gets a port above it, and is listening on it.
    const next = server();
    const port = await listenOnFirstFree(next, '127.0.0.1', first, 50);
    expect(port).toBeGreaterThan(first);
    expect(next.listening).toBe(true);
    expect(next.address()).toMatchObject({ port });
  });

  it('fails with EADDRINUSE when every port of the span is taken, leaving the server closed', async () => {
    const held = await listenOnFirstFree(server(), '127.0.0.1', 0);
    const loser = server();
    await expect(listenOnFirstFree(loser, '127.0.0.1', held, 1)).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });
    expect(loser.listening).toBe(false);
  });
});

import { describe, expect, it } from '@jest/globals';
import { ObjectQueue } from '../../../shared/server/object-queue.js';

/** A piece of work that ends when the test says so, recording when it started and ended. */
function gate(log: string[], name: string) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    open,
    work: async () => {
      log.push(`${name} start`);
      await opened;
      log.push(`${name} end`);
      return name;
    },
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('ObjectQueue', () => {
  it('runs deliveries of one object one at a time, in arrival order', async () => {
    const queue = new ObjectQueue();
    const log: string[] = [];
    const [a, b, c] = ['a', 'b', 'c'].map((name) => gate(log, name)) as [
      ReturnType<typeof gate>,
      ReturnType<typeof gate>,
      ReturnType<typeof gate>,
    ];
    const results = [queue.run('x', a.work), queue.run('x', b.work), queue.run('x', c.work)];
    await turn();
    expect(log).toEqual(['a start']);
    // Opening c first changes nothing: it has not started.
    c.open();
    b.open();
    await turn();
    expect(log).toEqual(['a start']);
    a.open();
    await expect(Promise.all(results)).resolves.toEqual(['a', 'b', 'c']);
    expect(log).toEqual(['a start', 'a end', 'b start', 'b end', 'c start', 'c end']);
    expect(queue.objects).toBe(0);
  });

  it('runs deliveries of other objects beside each other', async () => {
    const queue = new ObjectQueue();
    const log: string[] = [];
    const a = gate(log, 'a');
    const b = gate(log, 'b');
    const results = [queue.run('x', a.work), queue.run('y', b.work)];
    await turn();
    expect(log).toEqual(['a start', 'b start']);
    expect(queue.objects).toBe(2);
    b.open();
    await results[1];
    expect(queue.objects).toBe(1);
    a.open();
    await results[0];
    expect(queue.objects).toBe(0);
  });

  it('goes on after a delivery that failed, and tells the next how long it waited', async () => {
    const queue = new ObjectQueue();
    const failing = queue.run('x', async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw new Error('boom');
    });
    const waited: number[] = [];
    const next = queue.run('x', async ({ waitedMs }) => {
      waited.push(waitedMs);
      return 'next';
    });
    await expect(failing).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
    expect(waited[0]).toBeGreaterThanOrEqual(15);
    // Alone, it waits for nothing.
    await queue.run('x', async ({ waitedMs }) => waited.push(waitedMs));
    expect(waited[1]).toBe(0);
    expect(queue.objects).toBe(0);
  });

  it('waits at most its limit for a delivery that never ends, then runs beside it', async () => {
    const queue = new ObjectQueue(40);
    const log: string[] = [];
    const hung = gate(log, 'hung');
    void queue.run('x', hung.work);
    const second = gate(log, 'second');
    const waits: { waitedMs: number; gaveUp: boolean }[] = [];
    const secondDone = queue.run('x', async (wait) => {
      waits.push(wait);
      return second.work();
    });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(log).toEqual(['hung start', 'second start']);
    expect(waits[0]?.gaveUp).toBe(true);
    expect(waits[0]?.waitedMs).toBeGreaterThanOrEqual(35);
    // The next one waits for the second alone (waiting for the hung one too, it would give up).
    const third = queue.run('x', async (wait) => {
      waits.push(wait);
      return 'third';
    });
    second.open();
    await secondDone;
    await expect(third).resolves.toBe('third');
    expect(waits[1]?.gaveUp).toBe(false);
    hung.open();
  });
});

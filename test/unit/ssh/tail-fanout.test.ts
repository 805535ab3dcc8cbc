import { runWithConcurrency } from '../../../functions/software-install/ssh/fanout.js';
import { LineTail } from '../../../functions/software-install/ssh/tail.js';

test('LineTail keeps the last lines across chunk boundaries, bounded in count and width', () => {
  const tail = new LineTail(3, 10);
  tail.push('one\ntw');
  tail.push(Buffer.from('o\r\nthree\nfour\n'));
  tail.push('x'.repeat(50));
  expect(tail.snapshot()).toEqual(['three', 'four', 'xxxxxxxxxx…']);
  const big = new LineTail(2);
  for (let i = 0; i < 10000; i++) big.push(`line ${i}\n`);
  expect(big.snapshot()).toEqual(['line 9998', 'line 9999']);
});

test('LineTail decodes UTF-8 split across chunks', () => {
  const tail = new LineTail();
  const bytes = Buffer.from('é\n');
  tail.push(bytes.subarray(0, 1));
  tail.push(bytes.subarray(1));
  expect(tail.snapshot()).toEqual(['é']);
});

test('fan-out keeps order, respects the limit and isolates failures', async () => {
  let running = 0;
  let peak = 0;
  const releases: (() => void)[] = [];
  const job = async (n: number) => {
    running++;
    peak = Math.max(peak, running);
    await new Promise<void>((resolve) => releases.push(resolve));
    running--;
    if (n === 2) throw new Error('host 2 broke');
    return n * 10;
  };
  const done = runWithConcurrency([0, 1, 2, 3, 4, 5, 6], job, 3);
  // Release jobs in reverse order of start as they arrive, until all have run.
  let released = 0;
  while (released < 7) {
    await new Promise((r) => setImmediate(r));
    const next = releases.pop();
    if (next) {
      next();
      released++;
    }
  }
  const results = await done;
  expect(peak).toBe(3);
  expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
    0,
    10,
    'host 2 broke',
    30,
    40,
    50,
    60,
  ]);
});

test('fan-out rejects a nonsensical limit and handles no items', async () => {
  await expect(runWithConcurrency([1], async (n) => n, 0)).rejects.toThrow(RangeError);
  await expect(runWithConcurrency([], async (n: number) => n)).resolves.toEqual([]);
});

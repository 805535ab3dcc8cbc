import { describe, expect, it } from '@jest/globals';
import { OwnWrites, echoWanted, noteWrite } from '../../../shared/k8s/own-writes.js';

const object = (uid: string, resourceVersion: string) => ({ metadata: { uid, resourceVersion } });
/** A write that stored `resourceVersion`, based on an older read. */
const note = (uid: string, resourceVersion: string) => noteWrite(object(uid, resourceVersion), 'older');

describe('OwnWrites', () => {
  it('records the versions a step wrote once the step ends', async () => {
    const own = new OwnWrites();
    let seenInside: boolean | undefined;
    await own.recording(async () => {
      note('u1', '10');
      await new Promise((resolve) => setImmediate(resolve));
      note('u1', '11');
      // Not before the step has ended: an echo then must still be read.
      seenInside = own.wrote('u1', '10');
    });
    expect(seenInside).toBe(false);
    expect([own.wrote('u1', '10'), own.wrote('u1', '11')]).toEqual([true, true]);
    expect([own.wrote('u1', '12'), own.wrote('u2', '10')]).toEqual([false, false]);
  });

  it('records nothing of a step that threw (its fault write and what came before stay events)', async () => {
    const own = new OwnWrites();
    await expect(
      own.recording(async () => {
        note('u1', '10');
        throw new Error('API hiccup');
      }),
    ).rejects.toThrow('API hiccup');
    expect(own.wrote('u1', '10')).toBe(false);
  });

  it('keeps steps running side by side apart, and notes nothing outside a step', async () => {
    const own = new OwnWrites();
    note('outside', '1');
    let fail!: (error: Error) => void;
    const failing = own.recording(
      () =>
        new Promise<void>((_resolve, reject) => {
          note('a', '1');
          fail = reject;
        }),
    );
    await own.recording(async () => {
      note('b', '1');
    });
    fail(new Error('fault'));
    await expect(failing).rejects.toThrow('fault');
    expect([own.wrote('outside', '1'), own.wrote('a', '1'), own.wrote('b', '1')]).toEqual([
      false,
      false,
      true,
    ]);
  });

  it('a step inside another records into the outer one, kept only if the outer ends well', async () => {
    const own = new OwnWrites();
    await expect(
      own.recording(async () => {
        await own.recording(async () => {
          note('u1', '5');
        });
        expect(own.wrote('u1', '5')).toBe(false);
        throw new Error('outer fault');
      }),
    ).rejects.toThrow('outer fault');
    expect(own.wrote('u1', '5')).toBe(false);
  });

  it('notes nothing written inside echoWanted: that echo reaches the step', async () => {
    const own = new OwnWrites();
    await own.recording(async () => {
      note('u1', '1');
      await echoWanted(async () => {
        note('u1', '2');
      });
      note('u1', '3');
    });
    expect([own.wrote('u1', '1'), own.wrote('u1', '2'), own.wrote('u1', '3')]).toEqual([true, false, true]);
  });

  it('holds at most its bounds: the oldest object and the oldest versions go first', async () => {
    const own = new OwnWrites(2, 2);
    await own.recording(async () => {
      for (const rv of ['1', '2', '3']) note('a', rv);
      note('b', '1');
      note('c', '1');
    });
    expect([own.wrote('a', '3'), own.wrote('b', '1'), own.wrote('c', '1')]).toEqual([false, true, true]);
    await own.recording(async () => {
      note('x', '1');
      note('x', '2');
      note('x', '3');
    });
    expect([own.wrote('x', '1'), own.wrote('x', '2'), own.wrote('x', '3')]).toEqual([false, true, true]);
  });
});

import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The versions of objects this function server wrote in steps that ran to their end (issue 26
 * item 3: the chain's own status writes make no function do work). Every write of a step comes
 * back as an update event, an echo, showing the object at the version the write produced. The
 * step that wrote it had then read the object, acted on it and ended: the object at that version
 * needs nothing from it that it did not already do. A change by anyone else has a version of its
 * own and its own event, so it is never skipped; the sweep covers an event that was lost.
 *
 * So the shared step's prologue (define-step.ts) drops an event whose object is at a version
 * recorded here, before any read. The version comes from the event's data: a hint that may only
 * make the step skip work, never act (a forged one skips a state this server already handled).
 *
 * Only steps that ended without throwing record their writes: a fault's `<condition>=Unknown`
 * write and whatever the step wrote before the fault stay ordinary events, as before. The per-
 * object queue (shared/server/object-queue.ts) makes an echo wait for the step that wrote it, so
 * the step has ended when its echo is looked up. In-process only, like the queue: another replica,
 * or an echo that stopped waiting, reads the object as it did without this.
 */
export class OwnWrites {
  /** Versions by object uid, oldest uid first (Map order), at most `maxObjects` uids. */
  private readonly versions = new Map<string, string[]>();

  constructor(
    private readonly maxObjects = 10_000,
    private readonly maxVersionsPerObject = 8,
  ) {}

  /** Whether a step of this server wrote the object `uid` at `resourceVersion` and then ended. */
  wrote(uid: string, resourceVersion: string): boolean {
    return this.versions.get(uid)?.includes(resourceVersion) ?? false;
  }

  /**
   * Runs `step`; if it ends without throwing, records the versions it wrote (noteWrite). A step
   * inside another's run records into the outer one's list.
   */
  async recording<T>(step: () => Promise<T>): Promise<T> {
    const outer = written.getStore();
    if (outer) return step();
    const list: ObjectVersion[] = [];
    const result = await written.run(list, step);
    for (const { uid, resourceVersion } of list) this.record(uid, resourceVersion);
    return result;
  }

  private record(uid: string, resourceVersion: string) {
    const known = this.versions.get(uid) ?? [];
    // Re-inserted: the uid written last is evicted last.
    this.versions.delete(uid);
    this.versions.set(uid, [...known, resourceVersion].slice(-this.maxVersionsPerObject));
    if (this.versions.size > this.maxObjects) {
      const oldest = this.versions.keys().next().value;
      if (oldest !== undefined) this.versions.delete(oldest);
    }
  }
}

interface ObjectVersion {
  uid: string;
  resourceVersion: string;
}

const written = new AsyncLocalStorage<ObjectVersion[]>();
/** The store inside echoWanted: what is written there is not noted. */
const notNoted: readonly ObjectVersion[] = Object.freeze([]);

/**
 * Runs `work` with its writes not noted: their echoes reach the step like anyone else's change.
 * For a write whose echo is where the step goes on (one reply per request: software-install
 * announces an install's outcome, and decides on the echo whether joined nodes need one more).
 */
export function echoWanted<T>(work: () => Promise<T>): Promise<T> {
  return written.run(notNoted as ObjectVersion[], work);
}

/**
 * Notes an object as a write returned it, for the step running now (OwnWrites.recording), and
 * returns it; outside a recording step nothing is noted. Called by the shared writers
 * (status-apply.ts, finalizers.ts) with the resourceVersion the write was based on: a write that
 * changed nothing (a server-side apply restating what is stored) stores no version of its own and
 * returns the object as it was, at a version someone else may have written (an install Job's
 * outcome): that one is not this step's, and its event must still be read.
 */
export function noteWrite<T extends { metadata?: { uid?: string; resourceVersion?: string } }>(
  stored: T,
  basedOn: string | undefined,
): T {
  const list = written.getStore();
  if (list === notNoted) return stored;
  const uid = stored.metadata?.uid;
  const resourceVersion = stored.metadata?.resourceVersion;
  if (list && uid && resourceVersion && resourceVersion !== basedOn) list.push({ uid, resourceVersion });
  return stored;
}

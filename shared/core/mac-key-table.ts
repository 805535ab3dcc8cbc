const empty = -1;

/**
 * A map from MAC keys (the 48-bit numbers of leaseMacKey) to numbers that allocates nothing per
 * `set`: open addressing over typed arrays, iterated in first-insertion order like a Map. The
 * ISC scanner records one entry per lease block, and a Map with keys beyond the small-integer
 * range would box every one of them.
 */
export class MacKeyTable {
  private keys: Float64Array;
  private values: Float64Array;
  /** Slot of each key, in the order the keys were first set. */
  private order: Int32Array;
  private count = 0;

  constructor(initialCapacity = 1024) {
    const capacity = 2 ** Math.ceil(Math.log2(Math.max(16, initialCapacity)));
    this.keys = new Float64Array(capacity).fill(empty);
    this.values = new Float64Array(capacity);
    this.order = new Int32Array(capacity / 2);
  }

  get size(): number {
    return this.count;
  }

  /** Sets `key` (a non-negative integer below 2^48) to `value`. */
  set(key: number, value: number): void {
    let slot = this.slotOf(key);
    if (this.keys[slot] !== key) {
      if (this.count === this.order.length) {
        this.grow();
        slot = this.slotOf(key);
      }
      this.keys[slot] = key;
      this.order[this.count++] = slot;
    }
    this.values[slot] = value;
  }

  get(key: number): number | undefined {
    const slot = this.slotOf(key);
    return this.keys[slot] === key ? this.values[slot] : undefined;
  }

  /** Calls `visit` for each key and its value, in first-insertion order. */
  forEach(visit: (key: number, value: number) => void): void {
    for (let i = 0; i < this.count; i++) {
      const slot = this.order[i]!;
      visit(this.keys[slot]!, this.values[slot]!);
    }
  }

  /** The slot holding `key`, or the empty slot where it belongs (the table is never full). */
  private slotOf(key: number): number {
    const { keys } = this;
    const mask = keys.length - 1;
    const low = (key % 0x1_0000_0000) | 0;
    const high = (key / 0x1_0000_0000) | 0;
    const mixed = Math.imul(low ^ Math.imul(high, 0x85eb_ca6b), 0x9e37_79b1);
    let slot = (mixed ^ (mixed >>> 15)) & mask;
    while (keys[slot] !== key && keys[slot] !== empty) slot = (slot + 1) & mask;
    return slot;
  }

  /** Doubles the capacity (kept at most half full so probes stay short). */
  private grow(): void {
    const { keys, values, order, count } = this;
    this.keys = new Float64Array(keys.length * 2).fill(empty);
    this.values = new Float64Array(keys.length * 2);
    this.order = new Int32Array(keys.length);
    this.count = 0;
    for (let i = 0; i < count; i++) this.set(keys[order[i]!]!, values[order[i]!]!);
  }
}

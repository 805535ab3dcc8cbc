// The ISC lease scanner as it was before the allocation-free rewrite (statement by statement,
// one string per word), kept as the reference the fast scanner is checked against.
import { isIP } from 'node:net';
import { normaliseLeaseMac } from '../../../shared/core/lease-mac.js';

/**
 * ISC dhcpd.leases(5) parser. Returns MAC → IP of the last `lease` block naming that MAC, or
 * null when that block's `binding state` is not `active` (the last block decides, so a later
 * inactive block hides an earlier active one).
 *
 * A small hand-written scanner rather than regular expressions: statements are found by
 * their delimiters (`;`, `{`, `}`), so comments, quoted strings with escapes (`uid
 * "\001\000..."`), `server-duid`, `authoring-byte-order`, `failover peer` and `host` blocks,
 * nested `on expiry { ... }` blocks and unknown statements are skipped without losing the
 * blocks around them. Only the few words it needs are copied out of the text, which keeps a
 * 100,000-block file to a few tens of milliseconds.
 */
export function parseIscLeasesReference(text: string): Map<string, string | null> {
  return new IscLeaseScanner(text).run();
}

const SPACE = 32;
const TAB = 9;
const LF = 10;
const CR = 13;
const HASH = 35;
const QUOTE = 34;
const BACKSLASH = 92;
const SEMI = 59;
const OPEN = 123;
const CLOSE = 125;
const LOWER_B = 98;
const LOWER_H = 104;
const LOWER_L = 108;

function isDelimiter(code: number): boolean {
  return (
    code === SPACE ||
    code === TAB ||
    code === LF ||
    code === CR ||
    code === SEMI ||
    code === OPEN ||
    code === CLOSE ||
    code === QUOTE ||
    code === HASH ||
    Number.isNaN(code)
  );
}

const specials = [';', '{', '}', '"', '#'];

class IscLeaseScanner {
  private pos = 0;
  private readonly nextSpecialAt = specials.map(() => -1);
  private readonly leases = new Map<string, string | null>();
  constructor(private readonly text: string) {}

  run(): Map<string, string | null> {
    const { text } = this;
    while (this.skipSpace()) {
      const code = text.charCodeAt(this.pos);
      if (code === SEMI || code === CLOSE) {
        // An empty statement or a stray closing brace: nothing to read.
        this.pos++;
      } else if (code === LOWER_L && this.atKeyword('lease')) {
        this.pos += 5;
        this.readLease();
      } else {
        this.skipStatement();
      }
    }
    // Addresses are checked once per MAC rather than once per block.
    for (const [mac, ip] of this.leases) if (ip !== null && isIP(ip) === 0) this.leases.set(mac, null);
    return this.leases;
  }

  /** After `lease`: `<ip> { statements }`. Anything else is skipped as an unknown statement. */
  private readLease(): void {
    const ip = this.readWord();
    if (!this.skipSpace() || this.text.charCodeAt(this.pos) !== OPEN || ip === null) {
      this.skipStatement();
      return;
    }
    this.pos++;
    let mac: string | null = null;
    let active = false;
    for (;;) {
      if (!this.skipSpace()) return; // truncated block at end of file: ignored
      const code = this.text.charCodeAt(this.pos);
      if (code === CLOSE) {
        this.pos++;
        break;
      }
      if (code === SEMI) {
        this.pos++;
        continue;
      }
      if (code === LOWER_H && this.atKeyword('hardware')) {
        this.pos += 8;
        if (this.skipWord('ethernet')) {
          const address = this.readWord();
          if (address !== null) mac = normaliseLeaseMac(address);
        }
      } else if (code === LOWER_B && this.atKeyword('binding')) {
        this.pos += 7;
        if (this.skipWord('state')) active = this.skipWord('active');
      }
      this.skipStatement();
    }
    if (mac !== null) this.leases.set(mac, active ? ip : null);
  }

  /** Moves past `word` (after any space) and answers true when it is next; else stays put. */
  private skipWord(word: string): boolean {
    if (!this.skipSpace() || !this.atKeyword(word)) return false;
    this.pos += word.length;
    return true;
  }

  /** Skips whitespace and `#` comments; false at end of text. */
  private skipSpace(): boolean {
    const { text } = this;
    const end = text.length;
    let pos = this.pos;
    while (pos < end) {
      const code = text.charCodeAt(pos);
      if (code === SPACE || code === TAB || code === LF || code === CR) pos++;
      else if (code === HASH) {
        const newline = text.indexOf('\n', pos);
        pos = newline === -1 ? end : newline + 1;
      } else break;
    }
    this.pos = pos;
    return pos < end;
  }

  /** True when the text at the cursor is `word` followed by a delimiter. */
  private atKeyword(word: string): boolean {
    return this.text.startsWith(word, this.pos) && isDelimiter(this.text.charCodeAt(this.pos + word.length));
  }

  /** Reads one bare word or quoted string (escapes decoded); null at a delimiter. */
  private readWord(): string | null {
    if (!this.skipSpace()) return null;
    const { text } = this;
    const start = this.pos;
    if (text.charCodeAt(start) === QUOTE) return this.readQuoted();
    let pos = start;
    while (!isDelimiter(text.charCodeAt(pos))) pos++;
    this.pos = pos;
    return pos === start ? null : text.slice(start, pos);
  }

  private readQuoted(): string {
    const { text } = this;
    let pos = this.pos + 1;
    let value = '';
    while (pos < text.length) {
      const code = text.charCodeAt(pos);
      if (code === QUOTE) {
        pos++;
        break;
      }
      if (code === BACKSLASH) {
        const octal = /^[0-7]{1,3}/.exec(text.slice(pos + 1, pos + 4));
        if (octal) {
          value += String.fromCharCode(parseInt(octal[0], 8));
          pos += 1 + octal[0].length;
        } else {
          value += text.charAt(pos + 1);
          pos += 2;
        }
        continue;
      }
      value += text.charAt(pos);
      pos++;
    }
    this.pos = pos;
    return value;
  }

  /**
   * Moves past the rest of the current statement: up to and including its `;`, or its whole
   * `{ ... }` block (nested blocks included). A `}` closing the enclosing block is left for
   * the caller. Jumps from one special character to the next with indexOf.
   */
  private skipStatement(): void {
    const { text } = this;
    const end = text.length;
    let pos = this.pos;
    let depth = 0;
    for (;;) {
      const at = this.nextSpecial(pos);
      if (at >= end) {
        pos = end;
        break;
      }
      const code = text.charCodeAt(at);
      if (code === SEMI) {
        pos = at + 1;
        if (depth === 0) break;
      } else if (code === QUOTE) {
        pos = this.endOfQuoted(at);
      } else if (code === HASH) {
        const newline = text.indexOf('\n', at);
        pos = newline === -1 ? end : newline + 1;
      } else if (code === OPEN) {
        depth++;
        pos = at + 1;
      } else {
        // CLOSE
        if (depth === 0) {
          pos = at;
          break;
        }
        depth--;
        pos = at + 1;
        if (depth === 0) break;
      }
    }
    this.pos = pos;
  }

  /** Index just past the closing quote of the string opening at `open` (escapes honoured). */
  private endOfQuoted(open: number): number {
    const { text } = this;
    let at = open;
    for (;;) {
      at = text.indexOf('"', at + 1);
      if (at === -1) return text.length;
      let backslashes = 0;
      while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
      if (backslashes % 2 === 0) return at + 1;
    }
  }

  /**
   * Position of the next `;`, `{`, `}`, `"` or `#` at or after `from`. Each character's next
   * position is cached and only searched again once the cursor has passed it, so the whole
   * file is searched about once per special character: linear, and at indexOf speed.
   */
  private nextSpecial(from: number): number {
    const cache = this.nextSpecialAt;
    let nearest = this.text.length;
    for (let k = 0; k < specials.length; k++) {
      let at = cache[k]!;
      if (at < from) {
        at = this.text.indexOf(specials[k]!, from);
        if (at === -1) at = this.text.length;
        cache[k] = at;
      }
      if (at < nearest) nearest = at;
    }
    return nearest;
  }
}

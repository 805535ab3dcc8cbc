import { isIP } from 'node:net';
import { normaliseLeaseMac } from './lease-mac.js';

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
export function parseIscLeases(text: string): Map<string, string | null> {
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

class IscLeaseScanner {
  private pos = 0;
  private readonly leases = new Map<string, string | null>();
  constructor(private readonly text: string) {}

  run(): Map<string, string | null> {
    const { text } = this;
    while (this.skipSpace()) {
      const code = text.charCodeAt(this.pos);
      if (code === SEMI || code === CLOSE) {
        // An empty statement or a stray closing brace: nothing to read.
        this.pos++;
      } else if (this.atKeyword('lease')) {
        this.pos += 5;
        this.readLease();
      } else {
        this.skipStatement();
      }
    }
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
      } else if (this.atKeyword('hardware')) {
        this.pos += 8;
        const type = this.readWord();
        const address = this.readWord();
        if (type === 'ethernet' && address !== null) mac = normaliseLeaseMac(address);
        this.skipStatement();
      } else if (this.atKeyword('binding')) {
        this.pos += 7;
        const state = this.readWord() === 'state' ? this.readWord() : null;
        active = state === 'active';
        this.skipStatement();
      } else {
        this.skipStatement();
      }
    }
    if (mac !== null && isIP(ip) !== 0) this.leases.set(mac, active ? ip : null);
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
   * the caller.
   */
  private skipStatement(): void {
    const { text } = this;
    const end = text.length;
    let pos = this.pos;
    let depth = 0;
    while (pos < end) {
      const code = text.charCodeAt(pos);
      if (code === QUOTE) {
        pos++;
        while (pos < end) {
          const inner = text.charCodeAt(pos);
          if (inner === BACKSLASH) pos += 2;
          else if (inner === QUOTE) break;
          else pos++;
        }
        pos++;
      } else if (code === HASH) {
        const newline = text.indexOf('\n', pos);
        pos = newline === -1 ? end : newline + 1;
      } else if (code === SEMI) {
        pos++;
        if (depth === 0) break;
      } else if (code === OPEN) {
        depth++;
        pos++;
      } else if (code === CLOSE) {
        if (depth === 0) break;
        depth--;
        pos++;
        if (depth === 0) break;
      } else pos++;
    }
    this.pos = pos;
  }
}

import { isIP } from 'node:net';
import { leaseMacKey, macFromKey, notAMac } from './lease-mac.js';
import { MacKeyTable } from './mac-key-table.js';

/**
 * ISC dhcpd.leases(5) parser. Returns MAC → IP of the last `lease` block naming that MAC, or
 * null when that block's `binding state` is not `active` (the last block decides, so a later
 * inactive block hides an earlier active one).
 *
 * A single-pass hand-written scanner rather than regular expressions: statements are found by
 * their delimiters (`;`, `{`, `}`), so comments, quoted strings with escapes (`uid
 * "\001\000..."`), `server-duid`, `authoring-byte-order`, `failover peer` and `host` blocks,
 * nested `on expiry { ... }` blocks and unknown statements are skipped without losing the
 * blocks around them. It allocates nothing per block: a block's MAC is read as a 48-bit
 * number and its address is remembered by position, and only the deciding block of each MAC
 * is turned into strings at the end, which keeps a 100,000-block file to a few tens of ms.
 */
export function parseIscLeases(text: string): Map<string, string | null> {
  // MAC key → position of the deciding block's address, or -1 when that block is not active.
  const deciding = new MacKeyTable();
  const end = text.length;
  const specials = new SpecialFinder(text);
  let pos = skipSpace(text, 0);
  while (pos < end) {
    const code = text.charCodeAt(pos);
    if (code === SEMI || code === CLOSE) {
      // An empty statement or a stray closing brace: nothing to read.
      pos++;
    } else if (code === LOWER_L && atKeyword(text, pos, 'lease')) {
      pos = readLease(text, pos + 5, deciding, specials);
    } else {
      pos = skipStatement(text, pos, specials);
    }
    pos = skipSpace(text, pos);
  }

  const leases = new Map<string, string | null>();
  deciding.forEach((key, addressAt) => {
    // Addresses are checked once per MAC rather than once per block.
    const ip = addressAt < 0 ? null : wordAt(text, addressAt);
    leases.set(macFromKey(key), ip !== null && isIP(ip) !== 0 ? ip : null);
  });
  return leases;
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

/** Characters that end a bare word; NaN (past the end of the text) ends one too. */
function isDelimiter(code: number): boolean {
  return (
    code === SPACE ||
    code === SEMI ||
    code === LF ||
    code === TAB ||
    code === CR ||
    code === OPEN ||
    code === CLOSE ||
    code === QUOTE ||
    code === HASH ||
    Number.isNaN(code)
  );
}

/**
 * After `lease`: `<ip> { statements }`, recorded in `deciding` when the block names a MAC.
 * Anything else is skipped as an unknown statement. Returns the position after the block.
 */
function readLease(text: string, from: number, deciding: MacKeyTable, specials: SpecialFinder): number {
  const end = text.length;
  const addressAt = skipSpace(text, from);
  const afterAddress = wordEnd(text, addressAt);
  let pos = skipSpace(text, afterAddress);
  if (afterAddress === addressAt || pos >= end || text.charCodeAt(pos) !== OPEN)
    return skipStatement(text, pos, specials);
  pos++;
  let macKey = notAMac;
  let active = false;
  for (;;) {
    pos = skipSpace(text, pos);
    if (pos >= end) return end; // truncated block at end of file: ignored
    const code = text.charCodeAt(pos);
    if (code === CLOSE) {
      pos++;
      break;
    }
    if (code === SEMI) {
      pos++;
      continue;
    }
    if (code === LOWER_H && atKeyword(text, pos, 'hardware')) {
      pos = skipSpace(text, pos + 8);
      if (atKeyword(text, pos, 'ethernet')) {
        const macAt = skipSpace(text, pos + 8);
        pos = wordEnd(text, macAt);
        if (pos > macAt) macKey = macKeyOfWord(text, macAt, pos);
      }
    } else if (code === LOWER_B && atKeyword(text, pos, 'binding')) {
      pos = skipSpace(text, pos + 7);
      if (atKeyword(text, pos, 'state')) {
        pos = skipSpace(text, pos + 5);
        active = atKeyword(text, pos, 'active');
      }
    }
    pos = skipStatement(text, pos, specials);
  }
  if (macKey !== notAMac) deciding.set(macKey, active ? addressAt : -1);
  return pos;
}

/** The MAC key of the word at [start, end): a bare MAC, or a quoted one (rare, decoded first). */
function macKeyOfWord(text: string, start: number, end: number): number {
  if (text.charCodeAt(start) !== QUOTE) return leaseMacKey(text, start, end);
  const decoded = decodeQuoted(text, start);
  return leaseMacKey(decoded, 0, decoded.length);
}

/** Skips whitespace and `#` comments; returns the next position (text.length at the end). */
function skipSpace(text: string, pos: number): number {
  const end = text.length;
  while (pos < end) {
    const code = text.charCodeAt(pos);
    if (code === SPACE || code === LF || code === TAB || code === CR) pos++;
    else if (code === HASH) {
      const newline = text.indexOf('\n', pos);
      pos = newline === -1 ? end : newline + 1;
    } else break;
  }
  return pos;
}

/** True when the text at `pos` is `word` followed by a delimiter. */
function atKeyword(text: string, pos: number, word: string): boolean {
  // A plain loop: cheaper than startsWith for these short words, which it is called with per statement.
  for (let i = 0; i < word.length; i++) if (text.charCodeAt(pos + i) !== word.charCodeAt(i)) return false;
  return isDelimiter(text.charCodeAt(pos + word.length));
}

/** End of the bare word or quoted string starting at `start` (start itself at a delimiter). */
function wordEnd(text: string, start: number): number {
  if (text.charCodeAt(start) === QUOTE) return endOfQuoted(text, start);
  let pos = start;
  while (!isDelimiter(text.charCodeAt(pos))) pos++;
  return pos;
}

/** The word at `start` as a string (quoted strings decoded), or null when there is none. */
function wordAt(text: string, start: number): string | null {
  if (text.charCodeAt(start) === QUOTE) return decodeQuoted(text, start);
  const end = wordEnd(text, start);
  return end === start ? null : text.slice(start, end);
}

/** The value of the quoted string opening at `open`: `\ooo` octal escapes and `\x` for x. */
function decodeQuoted(text: string, open: number): string {
  let pos = open + 1;
  let value = '';
  while (pos < text.length) {
    const code = text.charCodeAt(pos);
    if (code === QUOTE) break;
    if (code === BACKSLASH) {
      let digits = 0;
      let octal = 0;
      for (let digit = text.charCodeAt(pos + 1) - 48; digits < 3 && digit >= 0 && digit <= 7;) {
        octal = octal * 8 + digit;
        digits++;
        digit = text.charCodeAt(pos + 1 + digits) - 48;
      }
      value += digits > 0 ? String.fromCharCode(octal) : text.charAt(pos + 1);
      pos += 1 + Math.max(digits, 1);
      continue;
    }
    value += text.charAt(pos);
    pos++;
  }
  return value;
}

/** Index just past the closing quote of the string opening at `open` (escapes honoured). */
function endOfQuoted(text: string, open: number): number {
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
 * Moves past the rest of the statement at `pos`: up to and including its `;`, or its whole
 * `{ ... }` block (nested blocks included). A `}` closing the enclosing block is left for the
 * caller. It jumps with indexOf from one `;` or special character to the next instead of
 * visiting each character: an ordinary statement costs one search for its `;`.
 */
function skipStatement(text: string, pos: number, specials: SpecialFinder): number {
  const end = text.length;
  let depth = 0;
  let semi = indexOrEnd(text, ';', pos);
  for (;;) {
    const special = specials.next(pos);
    if (semi < special) {
      if (depth === 0) return semi + 1;
      pos = semi + 1;
      semi = indexOrEnd(text, ';', pos);
      continue;
    }
    if (special >= end) return end;
    const code = text.charCodeAt(special);
    if (code === QUOTE) {
      pos = endOfQuoted(text, special);
    } else if (code === HASH) {
      pos = indexOrEnd(text, '\n', special);
    } else if (code === OPEN) {
      depth++;
      pos = special + 1;
    } else {
      // CLOSE
      if (depth === 0) return special;
      depth--;
      pos = special + 1;
      if (depth === 0) return pos;
    }
    // A `;` inside a string or comment does not end the statement.
    if (semi < pos) semi = indexOrEnd(text, ';', pos);
  }
}

function indexOrEnd(text: string, search: string, from: number): number {
  const at = text.indexOf(search, from);
  return at === -1 ? text.length : at;
}

/**
 * Finds the next quote, `#`, `{` or `}`. Each one's next position is remembered and searched
 * again only once the scanner has passed it, so the text is searched about once per
 * character kind in all: linear, and at indexOf speed.
 */
class SpecialFinder {
  private quote = -1;
  private hash = -1;
  private open = -1;
  private close = -1;
  private nearest = -1;
  constructor(private readonly text: string) {}

  next(from: number): number {
    if (this.nearest >= from) return this.nearest;
    const { text } = this;
    if (this.quote < from) this.quote = indexOrEnd(text, '"', from);
    if (this.hash < from) this.hash = indexOrEnd(text, '#', from);
    if (this.open < from) this.open = indexOrEnd(text, '{', from);
    if (this.close < from) this.close = indexOrEnd(text, '}', from);
    this.nearest = Math.min(this.quote, this.hash, this.open, this.close);
    return this.nearest;
  }
}

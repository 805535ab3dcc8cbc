import { randomUUID } from 'node:crypto';

const TAB = 9;
const LF = 10;
const CR = 13;
const SPACE = 32;
const COMMA = 44;
const COLON = 58;
const OPEN_BRACKET = 91;
const OPEN_BRACE = 123;

/** How many `]` from the end are tried as the end of the items array. */
const closeAttempts = 4;
/** Cut points tried and found inside an item (e.g. a nested object that opens alike) before giving up. */
const maxFalseCuts = 64;
/** Length of the first item's opening text that marks where the next items start. */
const openingLength = 32;

const notJson: unique symbol = Symbol('notJson');

/**
 * Hands each item of a JSON `<Kind>List` object (`{"kind": "BareMetalHostList", "items": [...]}`)
 * to `accept`, parsed on its own, as soon as it is parsed. One JSON.parse of ten thousand hosts
 * makes one tree that lives through young-generation collections, each copying it; parsed item
 * by item, every raw item dies young and only what `accept` keeps survives.
 *
 * Items are cut before each occurrence of the first item's opening text that follows a comma,
 * with no scan of the characters between. Each piece is checked by JSON.parse (as one value, or
 * else as several items); a piece that is neither was cut inside an item, so it grows to the next
 * cut. The object around the items is checked by JSON.parse with a random token in their place,
 * which must come back as its `items` (so that key is the top-level one, and the last of its
 * name). Valid pieces joined by the commas between them are the items array, so the items are
 * exactly those JSON.parse of the whole text gives.
 *
 * Returns false whenever the text is anything else or anything is in doubt (YAML, an array, an
 * empty list, invalid JSON), or as soon as `accept` returns false. `accept` may have seen some
 * items by then: the caller drops what it kept and takes its general path, which words any error.
 * Never throws on its own.
 */
export function forEachJsonListItem(text: string, accept: (item: unknown) => boolean): boolean {
  // As parseObjects reads JSON: after trimStart.
  const json = text.trimStart();
  if (json.charCodeAt(0) !== OPEN_BRACE) return false;
  const itemsKey = json.indexOf('"items"');
  if (itemsKey < 0) return false;
  const colon = skipWhitespace(json, itemsKey + 7);
  if (json.charCodeAt(colon) !== COLON) return false;
  const itemsAt = skipWhitespace(json, colon + 1);
  if (json.charCodeAt(itemsAt) !== OPEN_BRACKET) return false;
  const first = skipWhitespace(json, itemsAt + 1);
  if (json.charCodeAt(first) !== OPEN_BRACE) return false;
  const opening = json.slice(first, first + openingLength);

  let start = first;
  let falseCuts = 0;
  for (let next = json.indexOf(opening, start + 1); next !== -1; next = json.indexOf(opening, next + 1)) {
    let comma = next - 1;
    while (isWhitespace(json.charCodeAt(comma))) comma--;
    // Items are separated by commas; the same text after anything else is inside an item.
    if (json.charCodeAt(comma) !== COMMA) continue;
    const items = parsePiece(json.slice(start, comma));
    if (items === notJson) {
      if (++falseCuts > maxFalseCuts) return false;
      continue;
    }
    for (const item of items) if (!accept(item)) return false;
    start = next;
  }

  // The last piece ends at one of the last few `]`; the object around the items must agree.
  let close = json.length;
  for (let attempt = 0; attempt < closeAttempts; attempt++) {
    close = json.lastIndexOf(']', close - 1);
    if (close <= start) return false;
    const items = parsePiece(json.slice(start, close));
    if (items === notJson) continue;
    const token = `bpa-items-${randomUUID()}`;
    const around = parseJson(`${json.slice(0, itemsAt)}${JSON.stringify(token)}${json.slice(close + 1)}`);
    if (!isListAround(around, token)) return false;
    for (const item of items) if (!accept(item)) return false;
    return true;
  }
  return false;
}

/** One or more comma-separated JSON values, or notJson. */
function parsePiece(piece: string): unknown[] | typeof notJson {
  const one = parseJson(piece);
  if (one !== notJson) return [one];
  // Items that do not open like the first one end up in the piece before them.
  const several = parseJson(`[${piece}]`);
  return Array.isArray(several) ? several : notJson;
}

/** A `<Kind>List` object whose `items` is the token (what parseObjects takes the items from). */
function isListAround(value: unknown, token: string): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { kind, items } = value as { kind?: unknown; items?: unknown };
  return typeof kind === 'string' && kind.endsWith('List') && items === token;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return notJson;
  }
}

function isWhitespace(code: number): boolean {
  return code === SPACE || code === LF || code === CR || code === TAB;
}

function skipWhitespace(json: string, pos: number): number {
  while (isWhitespace(json.charCodeAt(pos))) pos++;
  return pos;
}

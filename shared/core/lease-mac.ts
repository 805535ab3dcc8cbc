/**
 * MACs as lease files write them. dhcpd prints two lower-case hex digits per octet, but older
 * writers and hand-made files drop leading zeros (`0:16:3e:1:2:3`); both mean the same host.
 */
const canonicalMac = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;
const leaseMacPattern = /^[0-9a-fA-F]{1,2}([:-][0-9a-fA-F]{1,2}){5}$/;

export function normaliseLeaseMac(text: string): string | null {
  // Fast path: already in the normalised form, as dhcpd writes it.
  if (text.length === 17 && canonicalMac.test(text)) return text;
  if (!leaseMacPattern.test(text)) return null;
  return text
    .toLowerCase()
    .split(/[:-]/)
    .map((octet) => octet.padStart(2, '0'))
    .join(':');
}

/** What leaseMacKey answers for text that is not a MAC. */
export const notAMac = -1;

const COLON = 58;
const DASH = 45;

/** 0-15 for a hex digit's character code, -1 for anything else (NaN included). */
function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const lower = code | 32;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/**
 * The MAC in `text` from `start` to `end` as a 48-bit number, or notAMac. Accepts exactly what
 * normaliseLeaseMac accepts, without allocating: the ISC scanner reads one MAC per block and
 * only turns the few that decide into strings (macFromKey).
 */
export function leaseMacKey(text: string, start: number, end: number): number {
  let key = 0;
  let pos = start;
  for (let octets = 1; ; octets++) {
    const high = pos < end ? hexDigit(text.charCodeAt(pos)) : -1;
    if (high < 0) return notAMac;
    pos++;
    const low = pos < end ? hexDigit(text.charCodeAt(pos)) : -1;
    if (low >= 0) pos++;
    key = key * 256 + (low >= 0 ? high * 16 + low : high);
    if (octets === 6) return pos === end ? key : notAMac;
    const separator = pos < end ? text.charCodeAt(pos) : -1;
    if (separator !== COLON && separator !== DASH) return notAMac;
    pos++;
  }
}

const hexOctets = Array.from({ length: 256 }, (_, octet) => octet.toString(16).padStart(2, '0'));

/** The normalised text (`08:00:27:00:ab:3d`) of a key from leaseMacKey. */
export function macFromKey(key: number): string {
  let rest = key;
  let text = hexOctets[rest % 256]!;
  for (let octet = 1; octet < 6; octet++) {
    rest = Math.floor(rest / 256);
    text = `${hexOctets[rest % 256]!}:${text}`;
  }
  return text;
}

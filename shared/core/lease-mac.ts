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

import { invalid } from '../errors.js';

const normalisedPattern = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;
const macPattern = /^[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}$/;

/**
 * The normalised form of a MAC address (lower case, `:` separators), or null when the text is
 * not a MAC. Input may use upper case and `-` separators, but not a mix of separators.
 */
export function normaliseMac(text: string): string | null {
  // Fast path: most MACs already arrive normalised (hosts, leases, earlier output).
  if (text.length === 17 && normalisedPattern.test(text)) return text;
  const lower = text.trim().toLowerCase();
  if (!macPattern.test(lower)) return null;
  return lower.includes('-') ? lower.replaceAll('-', ':') : lower;
}

/** Like normaliseMac, but a malformed MAC is an error naming the node it belongs to. */
export function requireMac(text: string, nodeLabel: string): string {
  const mac = normaliseMac(text);
  if (mac === null)
    throw invalid(
      'InvalidMacAddress',
      `MAC address ${JSON.stringify(text)} of node ${nodeLabel} is not a valid MAC address (expected six hex pairs such as 08:00:27:00:ab:3d)`,
      { node: nodeLabel, macAddress: text },
    );
  return mac;
}

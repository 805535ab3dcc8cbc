/**
 * Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource): a decimal number then a
 * binary suffix (Ki Mi Gi Ti Pi Ei), a decimal one (m, k, M, G, T, P, E, or none) or an
 * exponent (e3, E-2). `16Gi`, `16384Mi`, `17179869184` and `16G` are all memory sizes a node
 * may ask for (contract section 14). Only what a size needs: no sign (a size is never negative).
 */

const binary: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const decimal: Readonly<Record<string, number>> = {
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const quantityPattern = /^(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/;

/**
 * The bytes of a memory quantity, rounded up to a whole byte as Kubernetes does, or undefined
 * when `value` is not a quantity. A number is a count of bytes (YAML's `memory: 17179869184`).
 */
export function quantityBytes(value: number | string): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.ceil(value) : undefined;
  const match = quantityPattern.exec(value.trim());
  if (!match) return undefined;
  const [, digits, suffix, exponent] = match;
  const multiplier =
    exponent !== undefined ? 10 ** Number(exponent) : (binary[suffix ?? ''] ?? decimal[suffix ?? '']!);
  const bytes = Math.ceil(Number(digits) * multiplier);
  return Number.isFinite(bytes) ? bytes : undefined;
}

/** A count of CPU cores: a positive integer, as a number or as text (`8`, `"8"`); else undefined. */
export function coreCount(value: number | string): number | undefined {
  const count = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  return Number.isSafeInteger(count) && count > 0 ? count : undefined;
}

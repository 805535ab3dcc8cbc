/**
 * The series a PromQL expression reads and the label names it uses: the part of PromQL a
 * dashboard query needs (selectors with matchers, range vectors, functions, aggregations with
 * by/without, binary operators with on/ignoring).
 */
export interface SeriesUse {
  series: string;
  /** Labels compared in `{...}` and named in by/without/on/ignoring lists. */
  labels: string[];
}

const keywords = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
]);

export function seriesUses(expr: string): SeriesUse[] {
  const labelLists = /\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g;
  const grouping = [...expr.matchAll(labelLists)].flatMap((m) =>
    (m[1] ?? '')
      .split(',')
      .map((label) => label.trim())
      .filter(Boolean),
  );
  // Strings first: a matcher value such as "$function" is not an identifier.
  const stripped = expr
    .replace(labelLists, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const token = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?/g;
  const uses: SeriesUse[] = [];
  for (const match of stripped.matchAll(token)) {
    const [, name = '', block, call] = match;
    if (call || keywords.has(name)) continue;
    if (/[0-9.]$/.test(stripped.slice(0, match.index))) continue; // an exponent: 1e3
    const matched = [...(block ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map(
      (m) => m[1]!,
    );
    uses.push({ series: name, labels: [...new Set([...matched, ...grouping])] });
  }
  return uses;
}

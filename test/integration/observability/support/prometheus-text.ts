/**
 * Reads the Prometheus text exposition format (what /metrics serves) into samples and the
 * declared metric types, enough to assert on values and labels.
 */
export interface Sample {
  /** The series name as written, with any `_bucket`/`_sum`/`_count` suffix. */
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** `# TYPE` declarations: metric name → counter | gauge | histogram | summary | untyped. */
  types: Map<string, string>;
}

const samplePattern = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

const unescape = (value: string) => value.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      continue;
    }
    const match = samplePattern.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(labelPattern)) labels[key!] = unescape(value!);
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return { samples, types };
}

/** Sum of the samples of `name` whose labels include every pair of `labels`. */
export function sumOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  return exposition.samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((total, s) => total + s.value, 0);
}

/** The metric a series belongs to: the name itself, or a histogram's name without its suffix. */
export function metricOfSeries(exposition: Exposition, series: string): string | undefined {
  if (exposition.types.has(series) && exposition.types.get(series) !== 'histogram') return series;
  const suffix = /_(bucket|sum|count)$/.exec(series);
  if (!suffix) return undefined;
  const base = series.slice(0, -suffix[0].length);
  return exposition.types.get(base) === 'histogram' ? base : undefined;
}

export async function scrape(url: string): Promise<Exposition> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}`);
  return parseExposition(await response.text());
}

/** The expositions of several endpoints as one (names do not collide across them here). */
export function merge(expositions: Exposition[]): Exposition {
  const types = new Map<string, string>();
  for (const e of expositions) for (const [name, type] of e.types) types.set(name, type);
  return { samples: expositions.flatMap((e) => e.samples), types };
}

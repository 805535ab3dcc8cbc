import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { functionNames, kustomize, kustomizeWithComponents, manifestsDir, ofKind, parseObjects } from './kustomize.js';

interface PodTemplate {
  metadata?: { labels?: Record<string, string> };
  spec: { containers: { ports?: { name?: string }[] }[] };
}

const observabilityDir = join(manifestsDir, 'observability');

const metricsFileSchema = z.object({
  $comment: z.string().optional(),
  metrics: z.array(
    z.object({
      name: z.string().regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/),
      type: z.enum(['counter', 'gauge', 'histogram']),
      unit: z.string().optional(),
      labels: z.array(z.string()),
      labelValues: z.record(z.string(), z.array(z.string())).optional(),
      exporter: z.string(),
      help: z.string().min(1),
    }),
  ),
});
const metrics = metricsFileSchema.parse(JSON.parse(readFileSync(join(observabilityDir, 'metrics.json'), 'utf8')));
type Metric = (typeof metrics.metrics)[number];

interface Panel {
  type: string;
  title: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}
const dashboardSchema = z.looseObject({
  uid: z.string(),
  title: z.string(),
  panels: z.array(z.looseObject({ type: z.string(), title: z.string() })),
  templating: z.object({ list: z.array(z.looseObject({ name: z.string(), query: z.unknown() })) }),
});
const dashboardText = readFileSync(join(observabilityDir, 'dashboard.json'), 'utf8');
const dashboard = dashboardSchema.parse(JSON.parse(dashboardText));
const panels = dashboard.panels as unknown as Panel[];

const promqlKeywords = new Set([
  'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset',
]);

export interface MetricUse {
  metric: string;
  /** Label names in `{...}` matchers, with the literal they compare to for = and !=. */
  matchers: { label: string; op: string; value: string }[];
  /** Labels in the `by (...)` clauses of the expression. */
  grouping: string[];
}

/**
 * The series a PromQL expression reads. Enough PromQL for dashboards: selectors with label
 * matchers, range vectors, functions, aggregations with by/without, binary operators.
 */
export function metricUses(expr: string): MetricUse[] {
  const labelLists = /\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g;
  const grouping = [...expr.matchAll(labelLists)].flatMap((m) =>
    (m[1] ?? '')
      .split(',')
      .map((label) => label.trim())
      .filter(Boolean),
  );
  // Without label lists and range/subquery brackets, every identifier is a function or
  // aggregation (followed by "("), a keyword, or a metric name with an optional matcher block.
  const stripped = expr.replace(labelLists, ' ').replace(/\[[^\]]*\]/g, ' ');
  const token = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?/g;
  const uses: MetricUse[] = [];
  for (const match of stripped.matchAll(token)) {
    const [, name = '', block, call] = match;
    if (call || promqlKeywords.has(name)) continue;
    if (/[0-9.]$/.test(stripped.slice(0, match.index))) continue; // the exponent of a number: 1e3
    const matchers = [...(block ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)].map(
      ([, label = '', op = '', value = '']) => ({ label, op, value }),
    );
    uses.push({ metric: name, matchers, grouping });
  }
  return uses;
}

/** The exported metric a series name belongs to, and the suffix it used. */
function resolve(series: string): { metric: Metric; suffix: string } | undefined {
  for (const metric of metrics.metrics) {
    if (series === metric.name && metric.type !== 'histogram') return { metric, suffix: '' };
    for (const suffix of ['_bucket', '_sum', '_count']) {
      if (metric.type === 'histogram' && series === metric.name + suffix) return { metric, suffix };
    }
  }
  return undefined;
}

const flatten = (list: Panel[]): Panel[] => list.flatMap((p) => [p, ...flatten(p.panels ?? [])]);
const expressions = flatten(panels).flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

describe('metricUses (the PromQL reader the dashboard check relies on)', () => {
  it('finds metric names, matchers and grouping labels, and skips functions and keywords', () => {
    expect(
      metricUses(
        'histogram_quantile(0.99, sum by (le, function) (rate(faas_execution_latency_bucket{function=~"$function", outcome!="success"}[$__rate_interval])))',
      ),
    ).toEqual([
      {
        metric: 'faas_execution_latency_bucket',
        matchers: [
          { label: 'function', op: '=~', value: '$function' },
          { label: 'outcome', op: '!=', value: 'success' },
        ],
        grouping: ['le', 'function'],
      },
    ]);
    expect(metricUses('clamp_min(sum(increase(a_total[3h])) - sum(increase(b_total[3h])), 0)').map((u) => u.metric)).toEqual([
      'a_total',
      'b_total',
    ]);
    expect(metricUses('x / on (job) group_left y').map((u) => u.metric)).toEqual(['x', 'y']);
  });
});

describe('Grafana dashboard', () => {
  it('queries something in every panel and covers each step of the chain', () => {
    const graphs = flatten(panels).filter((p) => p.type !== 'row');
    expect(graphs.length).toBeGreaterThan(0);
    for (const panel of graphs) expect([panel.title, (panel.targets ?? []).length > 0]).toEqual([panel.title, true]);
    const titles = graphs.map((p) => p.title.toLowerCase()).join('\n');
    for (const topic of ['event rate', 'failures', 'latency p99', 'in flight', 'time to ready']) {
      expect(titles).toContain(topic);
    }
  });

  it.each(expressions)('$panel: every series is an exported metric, used with its own labels', ({ expr }) => {
    const uses = metricUses(expr);
    expect(uses.length).toBeGreaterThan(0);
    for (const use of uses) {
      const resolved = resolve(use.metric);
      expect({ series: use.metric, exported: resolved !== undefined }).toEqual({ series: use.metric, exported: true });
      if (!resolved) continue;
      const allowed = new Set([...resolved.metric.labels, ...(resolved.suffix === '_bucket' ? ['le'] : [])]);
      for (const label of [...use.grouping, ...use.matchers.map((m) => m.label)]) {
        expect({ series: use.metric, label, known: allowed.has(label) }).toEqual({ series: use.metric, label, known: true });
      }
      for (const m of use.matchers.filter((m) => m.op === '=' || m.op === '!=')) {
        const values = resolved.metric.labelValues?.[m.label];
        if (values) expect(values).toContain(m.value);
      }
    }
    if (expr.includes('histogram_quantile')) expect(expr).toMatch(/by \(le\b/);
  });

  it('fills its function variable from an exported metric and label', () => {
    const variable = dashboard.templating.list.find((v) => v.name === 'function');
    const query = JSON.stringify(variable?.query);
    const [, metric = '', label = ''] = /label_values\((\w+),\s*(\w+)\)/.exec(query) ?? [];
    expect(resolve(metric)?.metric.labels).toContain(label);
  });
});

describe('manifests/observability', () => {
  const objects = parseObjects(kustomize(observabilityDir));

  it('ships the dashboard as a ConfigMap the Grafana sidecar picks up', () => {
    const [configMap] = ofKind(objects, 'ConfigMap');
    expect(configMap?.metadata.labels?.grafana_dashboard).toBe('1');
    expect(configMap?.metadata.namespace).toBe('bpa-system');
    expect((configMap as unknown as { data: Record<string, string> }).data['bpa-functions.json']).toBe(dashboardText);
  });

  it('scrapes /metrics of the function pods and the image service’s, on a port each of them has', () => {
    const podMonitor = z
      .looseObject({
        spec: z.object({
          selector: z.object({
            matchExpressions: z.array(z.object({ key: z.string(), operator: z.literal('In'), values: z.array(z.string()) })),
          }),
          podMetricsEndpoints: z.array(z.looseObject({ port: z.string(), path: z.string() })),
        }),
      })
      .parse(ofKind(objects, 'PodMonitor', 'monitoring.coreos.com')[0]);
    const [selector] = podMonitor.spec.selector.matchExpressions;
    expect(podMonitor.spec.selector.matchExpressions).toHaveLength(1);
    expect(selector?.key).toBe('app.kubernetes.io/name');
    expect(podMonitor.spec.podMetricsEndpoints.every((e) => e.path === '/metrics')).toBe(true);
    const endpointPorts = new Set(podMonitor.spec.podMetricsEndpoints.map((e) => e.port));

    // Every workload that serves /metrics: the four functions and the image service's three.
    const installed = parseObjects(kustomizeWithComponents(['image-service']));
    const podTemplates = installed.flatMap((object) => {
      const spec = (object as unknown as { spec?: { template?: PodTemplate } }).spec;
      if (!spec?.template) return [];
      if (object.kind === 'Service' && object.apiVersion === 'serving.knative.dev/v1') return [{ knative: true, template: spec.template }];
      if (object.kind === 'Deployment') return [{ knative: false, template: spec.template }];
      return [];
    });
    const served = new Map<string, string[]>();
    for (const { knative, template } of podTemplates) {
      const name = template.metadata?.labels?.['app.kubernetes.io/name'];
      if (!name) continue;
      // Knative names the serving container's port user-port in the pod (revision resources:
      // the user container's one port), whatever the ksvc calls it; a Deployment keeps its names.
      const ports = template.spec.containers.flatMap((c) => (c.ports ?? []).map((p) => (knative ? 'user-port' : p.name ?? '')));
      served.set(name, ports);
    }
    expect([...(selector?.values ?? [])].sort()).toEqual(
      [...functionNames, 'image-upload', 'image-verify', 'image-download'].sort(),
    );
    for (const name of selector?.values ?? []) {
      const ports = served.get(name) ?? [];
      expect({ name, scraped: ports.some((p) => endpointPorts.has(p)) }).toEqual({ name, scraped: true });
    }
    // Every workload of the install with a pod port is selected (a new one must not be missed).
    expect([...served.keys()].filter((name) => (served.get(name) ?? []).length > 0 && name !== 'dead-letter').sort()).toEqual(
      [...(selector?.values ?? [])].sort(),
    );
  });
});

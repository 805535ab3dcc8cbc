import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudEvent } from 'cloudevents';
import {
  loadTriggerRoutes,
  routeEvent,
  routesFor,
} from '../../integration/functions/support/trigger-routes.js';
import { BpaError } from '../../../shared/errors.js';
import { EventTypes, SourceEventTypes } from '../../../shared/events/types.js';
import { manifestsDir } from './kustomize.js';

// The chain harnesses route events by the Triggers of manifests/, through the embedded broker's
// filter code, not by a table of their own.

/** The hand-kept table the harness used before (kept here as the reference it must still match). */
function formerTable(type: string, kind: string | undefined): string[] {
  switch (type) {
    case SourceEventTypes.resourceAdd:
      return kind === 'Provisioning' ? ['host-lookup'] : kind === 'Software' ? ['software-install'] : [];
    case SourceEventTypes.resourceUpdate:
      if (kind === 'Provisioning') return ['host-lookup'];
      if (kind === 'Job') return ['kud-job-launch'];
      return kind === 'Software' ? ['software-install'] : [];
    case SourceEventTypes.ping:
      return ['host-lookup', 'kud-job-launch', 'software-install'];
    case EventTypes.hostsResolved:
      return ['inventory-render'];
    case EventTypes.inventoryRendered:
      return ['kud-job-launch'];
    case EventTypes.clusterReady:
      return ['software-install'];
    default:
      return [];
  }
}

const event = (type: string, kind?: string) =>
  new CloudEvent<unknown>({
    type,
    source: '/test',
    datacontenttype: 'application/json',
    data: { x: 1 },
    ...(kind ? { kind } : {}),
  });

const types = [...Object.values(EventTypes), ...Object.values(SourceEventTypes), 'com.example.other'];
const kinds = [undefined, 'Provisioning', 'Software', 'Job', 'Image', 'ConfigMap'];

describe('routing from the Triggers of manifests/', () => {
  it.each(types.flatMap((type) => kinds.map((kind) => [type, kind ?? '(no kind)', kind] as const)))(
    '%s, kind %s: where the former table routed it',
    (type, _, kind) => {
      expect(routesFor(event(type, kind))).toEqual(formerTable(type, kind));
    },
  );

  it('is one route per Trigger of manifests/', () => {
    const routes = loadTriggerRoutes();
    expect(routes.map((r) => `${r.trigger} -> ${r.subscriber}`)).toContain(
      'inventory-render-hosts-resolved -> inventory-render',
    );
    expect(routes).toHaveLength(11);
  });
});

describe('routing follows a change of the Triggers', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpa-trigger-routes-'));
    cpSync(manifestsDir, dir, { recursive: true });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const edit = (file: string, from: string, to: string) => {
    const path = join(dir, 'eventing', file);
    const text = readFileSync(path, 'utf8');
    expect(text).toContain(from);
    writeFileSync(path, text.replace(from, to));
  };

  it('a changed filter moves the event', () => {
    edit('triggers-inventory-render.yaml', `type: ${EventTypes.hostsResolved}`, 'type: com.example.renamed');
    const routes = loadTriggerRoutes(dir);
    expect(routeEvent(routes, event(EventTypes.hostsResolved))).toEqual([]);
    expect(routeEvent(routes, event('com.example.renamed'))).toEqual(['inventory-render']);
    // The shipped manifests are unchanged.
    expect(routesFor(event(EventTypes.hostsResolved))).toEqual(['inventory-render']);
  });

  it('a dropped attribute widens the filter (Knative attribute semantics)', () => {
    edit('triggers-kud-job-launch.yaml', '      type: dev.knative.apiserver.resource.update\n      kind: Job\n', '      kind: Job\n');
    const routes = loadTriggerRoutes(dir);
    expect(routeEvent(routes, event(SourceEventTypes.resourceAdd, 'Job'))).toEqual(['kud-job-launch']);
    expect(routeEvent(routes, event(SourceEventTypes.resourceUpdate, 'Job'))).toEqual(['kud-job-launch']);
  });

  it('the filters dialect runs through the broker code too', () => {
    edit(
      'triggers-inventory-render.yaml',
      `  filter:\n    attributes:\n      type: ${EventTypes.hostsResolved}\n`,
      `  filters:\n    - prefix:\n        type: org.akraino.icn.bpa.hosts.\n`,
    );
    const routes = loadTriggerRoutes(dir);
    expect(routeEvent(routes, event(EventTypes.hostsResolved))).toEqual(['inventory-render']);
    expect(routeEvent(routes, event('org.akraino.icn.bpa.hosts.other'))).toEqual(['inventory-render']);
    expect(routeEvent(routes, event(EventTypes.inventoryRendered))).toEqual(['kud-job-launch']);
  });

  it('a subscriber that names no Service is an error', () => {
    edit(
      'triggers-inventory-render.yaml',
      '    ref:\n      apiVersion: serving.knative.dev/v1\n      kind: Service\n      name: inventory-render\n',
      '    uri: http://127.0.0.1:1/\n',
    );
    expect(() => loadTriggerRoutes(dir)).toThrow(BpaError);
    expect(() => loadTriggerRoutes(dir)).toThrow(/inventory-render-hosts-resolved: its subscriber names no Service/);
  });
});

/**
 * The embedded broker (local/broker, OUR IMITATION of Knative's MT channel broker) against real
 * Knative Eventing v0.49.2 (built from its Go modules, installed from its config/ on the run's
 * node): the same Triggers and the same event scripts through both, and what each subscriber
 * receives compared: attributes, extensions, body, reply routing, retries on 5xx and 429, dead
 * letters. Each engine's subscriber is its own event recorder pod
 * (test/fixtures/node/event-recorder.mjs), so the two never mix. A difference either is fixed in
 * the embedded broker or is listed in `knownDifferences` below and in docs/knative.md, with why.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { KubernetesObject } from '@kubernetes/client-node';
import { startBroker, type RunningBroker } from '../../../local/broker/index.js';
import { waitFor } from '../../../local/control-plane/wait.js';
import { silentLogger } from '../../../shared/log.js';
import { useTestCluster } from '../../support/cluster.js';
import {
  brokerIngressBase,
  createObjects,
  describeOnKnative,
  mtBroker,
  startRecorder,
  waitForKnativeReady,
  type RecordedRequest,
  type Recorder,
} from '../../support/knative.js';

const cluster = useTestCluster({ namespacePrefix: 'knative-diff' });

/** Fast retries so a script ends in seconds on both engines. */
const delivery = (deadLetter: boolean) => ({
  retry: 2,
  backoffPolicy: 'linear',
  backoffDelay: 'PT0.2S',
  ...(deadLetter
    ? { deadLetterSink: { ref: { apiVersion: 'v1', kind: 'Service', name: 'SUBSCRIBER' }, uri: '/dead' } }
    : {}),
});

/** The Triggers both engines run: type filter -> the recorder's path that plays the subscriber. */
const routes: { name: string; type: string; path: string; deadLetter?: boolean }[] = [
  { name: 'plain', type: 'diff.plain', path: '/ok' },
  { name: 'server-error', type: 'diff.server-error', path: '/status/503', deadLetter: true },
  { name: 'throttled', type: 'diff.throttled', path: '/fail/1/429' },
  { name: 'client-error', type: 'diff.client-error', path: '/status/400', deadLetter: true },
  { name: 'ask', type: 'diff.ask', path: '/reply/diff.answer' },
  { name: 'answer', type: 'diff.answer', path: '/answer' },
];

function triggers(subscriber: string): KubernetesObject[] {
  return routes.map(
    (route) =>
      ({
        apiVersion: 'eventing.knative.dev/v1',
        kind: 'Trigger',
        metadata: { name: route.name },
        spec: {
          broker: 'default',
          filter: { attributes: { type: route.type } },
          subscriber: { ref: { apiVersion: 'v1', kind: 'Service', name: subscriber }, uri: route.path },
          delivery: JSON.parse(
            JSON.stringify(delivery(route.deadLetter ?? false)).replace('SUBSCRIBER', subscriber),
          ),
        },
      }) as KubernetesObject,
  );
}

const brokerObject = mtBroker('default', { async: true });

/** The event scripts: one event each, in binary mode, with an extension of its own. */
const scripts: { name: string; type: string; id: string; ttl?: string }[] = [
  ...routes
    .filter((r) => r.name !== 'answer')
    .map((r) => ({ name: r.name, type: r.type, id: `script-${r.name}` })),
  // No hop left (knativebrokerttl 1, the ingress takes one): refused with 400, delivered nowhere.
  { name: 'spent', type: 'diff.plain', id: 'script-spent', ttl: '1' },
];

async function post(url: string, script: (typeof scripts)[number]): Promise<number> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'ce-specversion': '1.0',
      'ce-type': script.type,
      'ce-source': '/differential',
      'ce-subject': `subject-${script.name}`,
      'ce-id': script.id,
      'ce-bpatestextension': 'kept',
      ...(script.ttl ? { 'ce-knativebrokerttl': script.ttl } : {}),
      'content-type': 'application/json',
    },
    body: JSON.stringify({ script: script.name }),
  });
  return response.status;
}

/** Ids of the probes that show each Trigger delivers before the scripts run (beforeAll). */
const probePrefix = 'probe-';
const isProbe = (r: RecordedRequest) => String(r.headers['ce-id'] ?? '').startsWith(probePrefix);

/** What a subscriber saw, without what differs by nature (times, hosts, trace ids), and no probe. */
function normalise(records: RecordedRequest[]) {
  const header = (r: RecordedRequest, name: string) => {
    const value = r.headers[name];
    return Array.isArray(value) ? value.join(',') : value;
  };
  return records
    .filter((r) => !isProbe(r))
    .map((r) => ({
      path: r.path,
      id: header(r, 'ce-id'),
      type: header(r, 'ce-type'),
      source: header(r, 'ce-source'),
      subject: header(r, 'ce-subject'),
      contentType: header(r, 'content-type'),
      body: r.body,
      extensions: Object.keys(r.headers)
        .filter((h) => h.startsWith('ce-'))
        .map((h) => h.slice(3))
        .filter((h) => !['specversion', 'id', 'type', 'source', 'subject', 'time', 'dataschema'].includes(h))
        .sort(),
      knativeerrorcode: header(r, 'ce-knativeerrorcode'),
      status: r.status,
    }))
    .sort((a, b) => `${a.id}${a.path}`.localeCompare(`${b.id}${b.path}`));
}

/**
 * Differences between the two that are by design, each with its reason (docs/knative.md,
 * "Embedded broker and Knative"): removed from both views before they are compared.
 */
const knownDifferences: {
  what: string;
  why: string;
  strip: (view: ReturnType<typeof normalise>[number]) => void;
}[] = [];

describeOnKnative('the embedded broker and real Knative Eventing, side by side', () => {
  let knativeRecorder: Recorder;
  let embeddedRecorder: Recorder;
  let embedded: RunningBroker;
  const seen = { knative: [] as RecordedRequest[], embedded: [] as RecordedRequest[] };
  const accepted = { knative: [] as number[], embedded: [] as number[] };

  beforeAll(async () => {
    const { kubeConfig, namespace } = cluster;
    [knativeRecorder, embeddedRecorder] = await Promise.all([
      startRecorder(kubeConfig, namespace, 'knative-subscriber'),
      startRecorder(kubeConfig, namespace, 'embedded-subscriber'),
    ]);
    await createObjects(kubeConfig, namespace, [brokerObject, ...triggers('knative-subscriber')]);
    await waitForKnativeReady(kubeConfig, {
      apiVersion: 'eventing.knative.dev/v1',
      kind: 'Broker',
      namespace,
      name: 'default',
    });
    for (const route of routes)
      await waitForKnativeReady(kubeConfig, {
        apiVersion: 'eventing.knative.dev/v1',
        kind: 'Trigger',
        namespace,
        name: route.name,
      });
    embedded = await startBroker({
      objects: [
        { ...brokerObject, metadata: { ...brokerObject.metadata, namespace } },
        ...triggers('embedded-subscriber').map((t) => ({ ...t, metadata: { ...t.metadata, namespace } })),
      ],
      // The same Service as Knative resolves it, reached the way this process can: its pod.
      resolveRef: () => embeddedRecorder.baseUrl,
      defaultNamespace: namespace,
      log: silentLogger,
    });
    const knativeIngress = `${await brokerIngressBase(kubeConfig)}/${namespace}/default`;
    // A Ready Trigger is not yet a subscriber Knative's data plane delivers to (docs/knative.md:
    // events accepted meanwhile reach nobody, with nothing logged), and on a loaded machine that
    // lasts seconds: each route is probed until its subscriber has seen a probe. Probes carry ids
    // of their own and are left out of everything compared below.
    let round = 0;
    await waitFor(
      async () => {
        const got = await knativeRecorder.received();
        const silent = routes.filter(
          (route) =>
            route.name !== 'answer' && !got.some((r) => isProbe(r) && r.headers['ce-type'] === route.type),
        );
        if (silent.length === 0) return true;
        round++;
        for (const route of silent)
          await post(knativeIngress, {
            name: route.name,
            type: route.type,
            id: `${probePrefix}${route.name}-${round}`,
          });
        return undefined;
      },
      {
        what: "every knative Trigger delivering to the recorder's probes",
        timeoutMs: 120_000,
        intervalMs: 2000,
      },
    );
    for (const script of scripts) {
      accepted.knative.push(await post(knativeIngress, script));
      accepted.embedded.push(await post(embedded.ingressUrl(namespace, 'default'), script));
    }
    // Done when each engine's subscriber has what a complete run gives: 3 attempts + a dead
    // letter for the 5xx, 2 attempts for the 429, the answer to the reply.
    for (const [engine, recorder] of [
      ['knative', knativeRecorder],
      ['embedded', embeddedRecorder],
    ] as const) {
      seen[engine] = await waitFor(
        async () => {
          const got = await recorder.received();
          const count = (id: string, path: string) =>
            got.filter((r) => r.headers['ce-id'] === id && r.path === path).length;
          const wanted: [string, boolean][] = [
            ['a dead letter for the 5xx', count('script-server-error', '/dead') === 1],
            ['2 attempts for the 429', count('script-throttled', '/fail/1/429') === 2],
            ['the answer to the reply', got.some((r) => r.path === '/answer' && !isProbe(r))],
            ['the plain event', count('script-plain', '/ok') === 1],
            ['a dead letter for the 400', count('script-client-error', '/dead') === 1],
          ];
          const missing = wanted.filter(([, ok]) => !ok).map(([what]) => what);
          // What arrived, so a timeout says which attempt or dead letter is missing.
          const arrived = got
            .filter((r) => !isProbe(r))
            .map((r) => `${String(r.headers['ce-id'])} ${r.path} ${r.status}`)
            .join('; ');
          if (missing.length > 0)
            throw new Error(
              `missing: ${missing.join(', ')} (ingress answers ${accepted[engine].join(' ')}; received: ${arrived})`,
            );
          const complete = true;
          return complete ? got : undefined;
        },
        {
          what: `${engine}'s subscriber to get every script's deliveries`,
          timeoutMs: 60_000,
          intervalMs: 500,
        },
      );
    }
    // Anything late (a stray retry) would show up now.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    seen.knative = await knativeRecorder.received();
    seen.embedded = await embeddedRecorder.received();
  }, 300_000);

  afterAll(async () => {
    await embedded?.close();
  });

  it('accepts every script at the ingress with the same status', () => {
    expect(accepted.embedded).toEqual(accepted.knative);
    expect(accepted.knative).toEqual(scripts.map((s) => (s.name === 'spent' ? 400 : 202)));
  });

  it('delivers the same requests: paths, attempts, attributes, extensions, bodies, replies and dead letters', () => {
    const view = (records: RecordedRequest[]) => {
      const normalised = normalise(records);
      for (const difference of knownDifferences) normalised.forEach(difference.strip);
      return normalised;
    };
    const knative = view(seen.knative);
    if (process.env.BPA_TEST_DUMP) process.stderr.write(`${JSON.stringify(knative, null, 1)}\n`);
    // The comparison has something to compare: every delivery of the scripts, with Knative's
    // own additions (arrival time, the error extensions of a dead letter).
    expect(knative).toHaveLength(11);
    // TTL: an event with no hop left is refused at the ingress and delivered nowhere.
    expect(knative.some((r) => r.id === 'script-spent')).toBe(false);
    expect(knative.find((r) => r.path === '/ok')?.extensions).toEqual(
      expect.arrayContaining(['bpatestextension', 'knativearrivaltime']),
    );
    expect(knative.find((r) => r.id === 'script-server-error' && r.path === '/dead')?.knativeerrorcode).toBe(
      '503',
    );
    expect(knative.find((r) => r.path === '/answer')?.id).toBe('script-ask-reply');
    expect(view(seen.embedded)).toEqual(knative);
  });

  it('retries a 5xx and a 429 but sends a 400 straight to the dead-letter sink, on both', () => {
    for (const records of [seen.knative, seen.embedded]) {
      const attempts = (id: string, path: string) =>
        records.filter((r) => r.headers['ce-id'] === id && r.path === path).length;
      expect(attempts('script-server-error', '/status/503')).toBe(3);
      expect(attempts('script-throttled', '/fail/1/429')).toBe(2);
      expect(attempts('script-client-error', '/dead')).toBe(1);
    }
  });
});

import { CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import { silentLogger } from '../../../shared/log.js';
import { startApiServerSources, type RunningApiServerSources } from '../../../local/sources/index.js';
import { useTestCluster } from '../../support/cluster.js';
import {
  startSubscriber,
  waitFor,
  type ReceivedRequest,
  type RecordingSubscriber,
} from '../../unit/broker/support/recording-subscriber.js';

const cluster = useTestCluster({ namespacePrefix: 'apiserversource' });
const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const resolveRef = () => {
  throw new Error('no refs in this test');
};

function source(name: string, sinkUrl: string, spec: Record<string, unknown>) {
  return {
    apiVersion: 'sources.knative.dev/v1',
    kind: 'ApiServerSource',
    metadata: { name, namespace: cluster.namespace },
    spec: { sink: { uri: sinkUrl }, ...spec },
  };
}

const byName = (received: ReceivedRequest[], name: string) =>
  received.filter((r) => r.headers['ce-name'] === name);

describe('local ApiServerSource against the real API server', () => {
  let core: CoreV1Api;
  let sink: RecordingSubscriber;
  let running: RunningApiServerSources | undefined;

  const configMap = (name: string, labels: Record<string, string>, extra: Partial<V1ConfigMap> = {}) =>
    core.createNamespacedConfigMap({
      namespace: cluster.namespace,
      body: { metadata: { name, labels, ...(extra.metadata ?? {}) }, data: { step: '1' } },
    });

  beforeAll(async () => {
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await configMap('before', { app: 'watched' });
  });
  beforeEach(async () => {
    sink = await startSubscriber(() => ({ status: 202 }));
  });
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    await sink.close();
  });

  it('emits Resource-mode add/update/delete events exactly as Knative does, for live watch events only', async () => {
    running = await startApiServerSources({
      objects: [
        source('resources', sink.url, {
          mode: 'Resource',
          resources: [{ apiVersion: 'v1', kind: 'ConfigMap', selector: { matchLabels: { app: 'watched' } } }],
          ceOverrides: { extensions: { lab: 'one' } },
        }),
      ],
      kubeConfig: cluster.kubeConfig,
      resolveRef,
      log: silentLogger,
    });
    const before = Date.now();
    const created = await configMap('cm1', { app: 'watched' });
    await configMap('unlabelled', { app: 'other' });
    await sink.waitForCount(1);
    await core.patchNamespacedConfigMap({
      name: 'cm1',
      namespace: cluster.namespace,
      body: [{ op: 'replace', path: '/data/step', value: '2' }],
    });
    await sink.waitForCount(2);
    await core.deleteNamespacedConfigMap({ name: 'cm1', namespace: cluster.namespace });
    await sink.waitForCount(3);

    const events = byName(sink.received, 'cm1');
    expect(events.map((e) => e.headers['ce-type'])).toEqual([
      'dev.knative.apiserver.resource.add',
      'dev.knative.apiserver.resource.update',
      'dev.knative.apiserver.resource.delete',
    ]);
    const ids = new Set<string>();
    for (const event of events) {
      const h = event.headers;
      expect(h['ce-specversion']).toBe('1.0');
      expect(h['ce-id']).toMatch(uuidV4);
      ids.add(h['ce-id'] as string);
      expect(h['ce-source']).toBe(cluster.server);
      expect(h['ce-subject']).toBe(`/apis/v1/namespaces/${cluster.namespace}/configmaps/cm1`);
      expect(Date.parse(h['ce-time'] as string)).toBeGreaterThanOrEqual(before - 1000);
      expect(h['content-type']).toBe('application/json');
      expect(h['ce-kind']).toBe('ConfigMap');
      expect(h['ce-apiversion']).toBe('v1');
      expect(h['ce-name']).toBe('cm1');
      expect(h['ce-namespace']).toBe(cluster.namespace);
      expect(h['ce-lab']).toBe('one');
    }
    expect(ids.size).toBe(3);
    const [add, update] = events.map((e) => JSON.parse(e.body.toString('utf8')));
    expect(add).toEqual(
      expect.objectContaining({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        data: { step: '1' },
        metadata: expect.objectContaining({
          name: 'cm1',
          uid: created.metadata!.uid,
          resourceVersion: expect.any(String),
        }),
      }),
    );
    expect(update.data).toEqual({ step: '2' });
    expect(update.metadata.resourceVersion).not.toBe(add.metadata.resourceVersion);
    // Never the object that existed before the source started, nor the one the selector excludes.
    expect(byName(sink.received, 'before')).toHaveLength(0);
    expect(byName(sink.received, 'unlabelled')).toHaveLength(0);
    expect(sink.received).toHaveLength(3);
  });

  it('emits Reference-mode events with only apiVersion, kind, name and namespace', async () => {
    running = await startApiServerSources({
      objects: [
        source('refs', sink.url, {
          resources: [{ apiVersion: 'v1', kind: 'ConfigMap', selector: { matchLabels: { app: 'ref' } } }],
        }),
      ],
      kubeConfig: cluster.kubeConfig,
      resolveRef,
      log: silentLogger,
    });
    await configMap('ref1', { app: 'ref' });
    const [event] = await sink.waitForCount(1);
    expect(event!.headers['ce-type']).toBe('dev.knative.apiserver.ref.add');
    expect(JSON.parse(event!.body.toString('utf8'))).toEqual({
      kind: 'ConfigMap',
      namespace: cluster.namespace,
      name: 'ref1',
      apiVersion: 'v1',
    });
  });

  it('replays objects that exist at start only when asked', async () => {
    running = await startApiServerSources({
      objects: [
        source('replay', sink.url, {
          mode: 'Resource',
          resources: [{ apiVersion: 'v1', kind: 'ConfigMap', selector: { matchLabels: { app: 'watched' } } }],
        }),
      ],
      kubeConfig: cluster.kubeConfig,
      resolveRef,
      replay: true,
      log: silentLogger,
    });
    const [event] = await sink.waitForCount(1);
    expect(event!.headers['ce-name']).toBe('before');
    expect(event!.headers['ce-type']).toBe('dev.knative.apiserver.resource.add');
    expect(event!.headers['ce-subject']).toBe(`/apis/v1/namespaces/${cluster.namespace}/configmaps/before`);
    expect(JSON.parse(event!.body.toString('utf8'))).toEqual(
      expect.objectContaining({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: expect.objectContaining({ name: 'before' }),
      }),
    );
  });

  it('keeps only objects whose controller owner matches, with matchExpressions selectors', async () => {
    running = await startApiServerSources({
      objects: [
        source('owned', sink.url, {
          resources: [
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              selector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['owned', 'free'] }] },
            },
          ],
          owner: { apiVersion: 'v1', kind: 'Pod' },
        }),
      ],
      kubeConfig: cluster.kubeConfig,
      resolveRef,
      log: silentLogger,
    });
    // A real owner: the run's garbage collector deletes objects whose owner does not exist
    // (and the source would report those deletions). No scheduler takes this pod.
    const owner = await core.createNamespacedPod({
      namespace: cluster.namespace,
      body: {
        metadata: { name: 'owner' },
        spec: {
          schedulerName: 'bpa-test-no-scheduler',
          containers: [{ name: 'c', image: 'bpa.local/none:1' }],
        },
      },
    });
    const ownerReference = (controller: boolean) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      name: 'owner',
      uid: owner.metadata!.uid!,
      controller,
    });
    await configMap('free', { tier: 'free' });
    await configMap(
      'not-controller',
      { tier: 'owned' },
      { metadata: { ownerReferences: [ownerReference(false)] } },
    );
    await configMap('owned', { tier: 'owned' }, { metadata: { ownerReferences: [ownerReference(true)] } });
    await configMap(
      'owned-last',
      { tier: 'owned' },
      { metadata: { ownerReferences: [ownerReference(true)] } },
    );
    await sink.waitForCount(2);
    expect(sink.received.map((r) => r.headers['ce-name'])).toEqual(['owned', 'owned-last']);
  });

  it('watches every namespace when namespaceSelector is {}', async () => {
    running = await startApiServerSources({
      objects: [
        source('everywhere', sink.url, {
          namespaceSelector: {},
          resources: [
            { apiVersion: 'v1', kind: 'ConfigMap', selector: { matchLabels: { app: 'everywhere' } } },
          ],
        }),
      ],
      kubeConfig: cluster.kubeConfig,
      resolveRef,
      log: silentLogger,
    });
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { generateName: 'ev-', labels: { app: 'everywhere' } } },
    });
    const [event] = await sink.waitForCount(1);
    expect(event!.headers['ce-namespace']).toBe('default');
  });

  it('retries the sink on 503 and gives up at once on 500', async () => {
    await sink.close();
    let calls = 0;
    sink = await startSubscriber((request) => {
      calls += 1;
      if (request.headers['ce-name'] === 'flaky') return { status: calls === 1 ? 503 : 202 };
      return { status: 500 };
    });
    const emissions: { name: string; attempts: number; ok: boolean }[] = [];
    running = await startApiServerSources({
      objects: [
        source('retries', sink.url, {
          resources: [{ apiVersion: 'v1', kind: 'ConfigMap', selector: { matchLabels: { app: 'retry' } } }],
        }),
      ],
      kubeConfig: cluster.kubeConfig,
      resolveRef,
      log: silentLogger,
      onEmit: (emission) =>
        emissions.push({
          name: emission.subject.split('/').pop()!,
          attempts: emission.result.attempts,
          ok: emission.result.ok,
        }),
    });
    await configMap('flaky', { app: 'retry' });
    await configMap('broken', { app: 'retry' });
    await waitFor(() => emissions.length === 2);
    expect(emissions).toEqual([
      { name: 'flaky', attempts: 2, ok: true },
      { name: 'broken', attempts: 1, ok: false },
    ]);
  });
});

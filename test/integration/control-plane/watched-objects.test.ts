/**
 * The server's watch of a custom resource (shared/k8s/watched-objects.ts, issue 26 item 4)
 * against the real kube-apiserver: it answers only at the exact version the caller names (uid and
 * resourceVersion), with what the API server stored then; a version it has not seen yet, an older
 * one, another uid or a deleted object all miss (the caller reads); what it hands out is a copy.
 * A watched ConfigMap (the installer settings) answers as last sent only while the watch is up.
 * And the step prologue (define-step.ts) takes an event's object from it with no GET, and reads
 * when the event names a version the watch does not hold.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi, type V1ConfigMap } from '@kubernetes/client-node';
import { kubeClients } from '../../../shared/k8s/clients.js';
import { getCustomObject } from '../../../shared/k8s/custom-objects.js';
import { defineStep } from '../../../shared/k8s/define-step.js';
import { provisioningPointer, provisioningTarget } from '../../../shared/k8s/provisioning.js';
import { provisioningsResource } from '../../../shared/k8s/resources.js';
import type { StoredObject } from '../../../shared/k8s/stored-object.js';
import {
  configMapWatch,
  customResourceWatch,
  WatchedList,
  WatchedObjects,
} from '../../../shared/k8s/watched-objects.js';
import { silentLogger } from '../../../shared/log.js';
import type { ResourceRef } from '../../../shared/events/types.js';
import type { FunctionContext } from '../../../shared/server/types.js';
import { useTestCluster } from '../../support/cluster.js';
import { RecordingKubeConfig } from '../../support/recording-kube-config.js';
import { waitFor } from '../../../local/control-plane/wait.js';
import { createOneNodeProvisioning } from '../functions/support/fixtures.js';
import { CloudEvent } from 'cloudevents';

const cluster = useTestCluster();
const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const stop of stops) await stop();
});

async function newProvisioning(name: string): Promise<StoredObject> {
  await createOneNodeProvisioning(cluster.kubeConfig, cluster.namespace, name);
  const object = await getCustomObject(
    kubeClients(cluster.kubeConfig),
    provisioningTarget(cluster.namespace, name),
  );
  if (!object) throw new Error(`Provisioning ${name} is gone`);
  return object;
}

/** Until `condition` holds (waitFor's check answers a value once it does). */
const until = (condition: () => boolean, what: string) =>
  waitFor(async () => (condition() ? true : undefined), { what, timeoutMs: 30_000 });

const versionOf = (object: StoredObject) => ({
  uid: object.metadata.uid,
  resourceVersion: object.metadata.resourceVersion,
});

async function startedWatch() {
  const watched = new WatchedList(
    cluster.kubeConfig,
    customResourceWatch(provisioningsResource),
    silentLogger,
  );
  stops.push(() => watched.stop());
  expect(watched.at(cluster.namespace, 'none', { uid: 'u', resourceVersion: '1' })).toBeUndefined();
  await until(() => watched.started, 'the watch started');
  return watched;
}

describe('a watched resource', () => {
  it('answers at exactly the version named, with what the API server stored', async () => {
    const watched = await startedWatch();
    const created = await newProvisioning('watched-exact');
    const at = (version: { uid?: string; resourceVersion?: string }) =>
      watched.at(cluster.namespace, 'watched-exact', version);
    await until(() => at(versionOf(created)) !== undefined, 'the watch has the Provisioning');
    expect(at(versionOf(created))).toEqual(created);
    expect(at({ ...versionOf(created), uid: 'another-uid' })).toBeUndefined();
    expect(at({ uid: created.metadata.uid })).toBeUndefined();

    // A copy: what a step changes in it is not what the next lookup gets.
    const copy = at(versionOf(created))!;
    copy.metadata.labels = { changed: 'yes' };
    expect(at(versionOf(created))?.metadata.labels).toEqual(created.metadata.labels);

    // A status write: the old version misses from then on, the new one answers with the status.
    const updated = (await cluster.kubeConfig
      .makeApiClient(CustomObjectsApi)
      .replaceNamespacedCustomObjectStatus({
        group: 'bpa.akraino.org',
        version: 'v1alpha1',
        plural: 'provisionings',
        namespace: cluster.namespace,
        name: 'watched-exact',
        body: { ...created, status: { jobName: 'written-elsewhere' } },
      })) as StoredObject;
    await until(() => at(versionOf(updated)) !== undefined, 'the watch has the update');
    expect(at(versionOf(updated))?.status?.jobName).toBe('written-elsewhere');
    expect(at(versionOf(created))).toBeUndefined();
    // A version the watch has not seen (not stored yet, or a forged one) misses.
    expect(at({ ...versionOf(updated), resourceVersion: '999999999' })).toBeUndefined();

    await cluster.kubeConfig.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
      group: 'bpa.akraino.org',
      version: 'v1alpha1',
      plural: 'provisionings',
      namespace: cluster.namespace,
      name: 'watched-exact',
    });
    await until(() => at(versionOf(updated)) === undefined, 'the watch saw the delete');
    expect(watched.counts.hits).toBeGreaterThan(0);
  }, 60_000);
});

describe('a watched ConfigMap', () => {
  it('answers as the watch last sent it only while the watch is up: absent, then written, then gone', async () => {
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const watched = new WatchedList(
      cluster.kubeConfig,
      configMapWatch('settings', cluster.namespace, 'watched-settings'),
      silentLogger,
    );
    stops.push(() => watched.stop());
    // Not up yet: no answer, so the caller reads.
    expect(watched.latest(cluster.namespace, 'watched-settings')).toBeUndefined();
    await until(() => watched.started, 'the watch started');
    expect(watched.latest(cluster.namespace, 'watched-settings')).toEqual({ object: undefined });
    // Another ConfigMap of the namespace is not watched (the field selector).
    await core.createNamespacedConfigMap({
      namespace: cluster.namespace,
      body: { metadata: { name: 'watched-other' }, data: { A: '1' } },
    });
    await core.createNamespacedConfigMap({
      namespace: cluster.namespace,
      body: { metadata: { name: 'watched-settings' }, data: { HTTP_PROXY: 'http://127.0.0.1:3128' } },
    });
    const data = () =>
      (watched.latest<V1ConfigMap>(cluster.namespace, 'watched-settings')?.object?.data ?? {})['HTTP_PROXY'];
    await until(() => data() === 'http://127.0.0.1:3128', 'the watch has the settings');
    expect(watched.latest(cluster.namespace, 'watched-other')).toEqual({ object: undefined });
    const stored = await core.readNamespacedConfigMap({
      namespace: cluster.namespace,
      name: 'watched-settings',
    });
    await core.replaceNamespacedConfigMap({
      namespace: cluster.namespace,
      name: 'watched-settings',
      body: { ...stored, data: { HTTP_PROXY: 'http://127.0.0.1:3129' } },
    });
    await until(() => data() === 'http://127.0.0.1:3129', 'the watch has the edit');
    await core.deleteNamespacedConfigMap({ namespace: cluster.namespace, name: 'watched-settings' });
    await until(
      () => watched.latest(cluster.namespace, 'watched-settings')?.object === undefined,
      'the watch saw the delete',
    );
    // Stopped: no answer again.
    await watched.stop();
    expect(watched.latest(cluster.namespace, 'watched-settings')).toBeUndefined();
  }, 60_000);
});

describe('the step prologue with a watch', () => {
  it('takes the object at the version the event names from the watch, and reads any other', async () => {
    const created = await newProvisioning('watched-step');
    const recording = new RecordingKubeConfig();
    recording.loadFromString(cluster.kubeConfig.exportConfig());
    const watched = new WatchedObjects(recording, [customResourceWatch(provisioningsResource)], silentLogger);
    stops.push(() => watched.stop());
    const seen: StoredObject[] = [];
    const step = defineStep<unknown, ResourceRef>({
      condition: 'WatchTested',
      read: (ref, _context, event) => provisioningPointer(ref, event),
      deleting: 'act',
      run: async (_run, live) => {
        seen.push(live);
        return undefined;
      },
    });
    const context: FunctionContext = {
      functionName: 'watch-test',
      log: silentLogger,
      kubeConfig: recording,
      config: {},
      send: async () => undefined,
      watched,
    };
    // A chain event naming the version its sender wrote (extension resourceversion), or none.
    const eventAt = (resourceVersion?: string) =>
      new CloudEvent({
        type: 'test.watch',
        source: '/test',
        data: {},
        ...(resourceVersion === undefined ? {} : { resourceversion: resourceVersion }),
      });
    const ref = {
      namespace: cluster.namespace,
      name: 'watched-step',
      uid: created.metadata.uid ?? '',
      generation: created.metadata.generation ?? 0,
    };
    const at = created.metadata.resourceVersion ?? '';
    const gets = () =>
      recording.calls.filter((c) => c.verb === 'get' && c.resource === 'provisionings').length;
    // The first lookup starts the watch and reads.
    await step(context, ref, eventAt(at));
    expect(gets()).toBe(1);
    const resource = watched.of(customResourceWatch(provisioningsResource).key)!;
    await until(
      () => resource.at(cluster.namespace, 'watched-step', versionOf(created)) !== undefined,
      'the watch has the Provisioning',
    );
    await step(context, ref, eventAt(at));
    expect(gets()).toBe(1);
    // No version named, one the watch does not hold, or no plausible one: a read, as without it.
    await step(context, ref, eventAt());
    await step(context, ref, eventAt('999999999'));
    await step(context, ref, eventAt('9'.repeat(65)));
    expect(gets()).toBe(4);
    expect(seen).toHaveLength(5);
    for (const live of seen) expect(live.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
  }, 60_000);
});

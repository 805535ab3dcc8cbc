/**
 * Two deliveries of the kubeconfig publisher's completion race (unit, fake clients): the one
 * that published wrote the Secret, set KubeconfigPublished True and deleted the Job; the other
 * one read the Provisioning and the Job before that, and finds the pod gone with the Job. It must
 * not report the publication failed: a judgment made on an older read never undoes a True of the
 * same generation (found in a whole-suite run: node/kubeconfig-secret saw KubeconfigPublishFailed).
 */
import { describe, expect, it } from '@jest/globals';
import type { V1Job } from '@kubernetes/client-node';
import { advanceKubeconfig } from '../../../functions/kud-job-launch/kubeconfig.js';
import {
  kudJobLaunchConfigSchema,
  type KudJobLaunchConfig,
} from '../../../functions/kud-job-launch/config.js';
import { kubeconfigPublisherName } from '../../../shared/core/lifecycle-names.js';
import { publisherGenerationAnnotation } from '../../../shared/core/lifecycle-objects.js';
import { managedByLabel, managedByValue, provisioningUidLabel } from '../../../shared/core/names.js';
import { parseEnv } from '../../../shared/config.js';
import type { KubeClients } from '../../../shared/k8s/clients.js';
import type { StoredObject } from '../../../shared/k8s/stored-object.js';
import { silentLogger } from '../../../shared/log.js';
import type { FunctionContext } from '../../../shared/server/types.js';
import { untouchableKubeConfig } from '../server/test-function.js';

const config = parseEnv(kudJobLaunchConfigSchema, {}, 'kud-job-launch');
const context = {
  functionName: 'kud-job-launch',
  log: silentLogger,
  kubeConfig: untouchableKubeConfig,
  config,
  send: () => Promise.resolve(),
} satisfies FunctionContext<KudJobLaunchConfig>;

const condition = (type: string, status: string, reason: string) => ({
  type,
  status,
  reason,
  message: `${type} ${status}`,
  lastTransitionTime: '2026-12-05T00:00:00Z',
  observedGeneration: 1,
});
const provisioning = (conditions: ReturnType<typeof condition>[]): StoredObject =>
  ({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: {
      name: 'edge',
      namespace: 'tenant',
      uid: 'p-1',
      generation: 1,
      resourceVersion: '10',
      labels: { cluster: 'edge' },
    },
    spec: { masters: [{ 'edge-1': { 'mac-address': '52:54:00:00:00:01' } }] },
    status: { jobName: 'kud-edge', conditions },
  }) as unknown as StoredObject;

const kudInstalled = condition('KudInstalled', 'True', 'KudInstalled');
/** The publisher of this generation, complete. */
const publisher: V1Job = {
  metadata: {
    name: kubeconfigPublisherName('edge'),
    namespace: config.FUNCTIONS_NAMESPACE,
    uid: 'job-1',
    labels: { [managedByLabel]: managedByValue, [provisioningUidLabel]: 'p-1', cluster: 'edge' },
    annotations: { [publisherGenerationAnnotation]: '1' },
  },
  status: { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] },
};

/** The API as the late delivery sees it: its Job read came first, the pod is gone, the status says `fresh`. */
function lateDeliveryClients(fresh: StoredObject) {
  const writes: string[] = [];
  const clients = {
    batch: {
      readNamespacedJob: () => Promise.resolve(publisher),
      deleteNamespacedJob: () => {
        writes.push('delete Job');
        return Promise.resolve({});
      },
    },
    core: {
      listNamespacedPod: () => Promise.resolve({ items: [] }),
      createNamespacedEvent: () => {
        writes.push('Event');
        return Promise.resolve({});
      },
    },
    custom: {
      getNamespacedCustomObject: () => Promise.resolve(fresh),
      patchNamespacedCustomObjectStatus: (request: { body: unknown }) => {
        writes.push(`status ${JSON.stringify(request.body)}`);
        return Promise.resolve({ ...fresh, metadata: { ...fresh.metadata, resourceVersion: '11' } });
      },
    },
  } as unknown as KubeClients;
  return { clients, writes };
}

describe('the kubeconfig publisher’s completion, delivered twice', () => {
  it('the late delivery leaves a publication of this generation as it is', async () => {
    const published = provisioning([
      kudInstalled,
      condition('KubeconfigPublished', 'True', 'KubeconfigPublished'),
    ]);
    const { clients, writes } = lateDeliveryClients(published);
    await advanceKubeconfig(context, clients, provisioning([kudInstalled]));
    expect(writes.filter((write) => write.startsWith('status') || write === 'Event')).toEqual([]);
  });

  it('with no publication recorded, the pod gone is still reported (the sweep runs the publisher again)', async () => {
    const { clients, writes } = lateDeliveryClients(provisioning([kudInstalled]));
    await advanceKubeconfig(context, clients, provisioning([kudInstalled]));
    const status = writes.filter((write) => write.startsWith('status'));
    expect(status).toHaveLength(1);
    expect(status[0]).toContain('KubeconfigPublishFailed');
  });
});

/**
 * Every error of the contract ends as HostsResolved/Ready False with the exact message, a
 * Warning Event with a specific reason, a provisioning.failed reply, and no Job.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { ChainHarness, sourceEvent } from './support/chain-harness.js';
import { contractErrorCases, createErrorCaseHosts } from './support/contract-errors.js';
import { conditionOf, createProvisioning, provisioningObject, readProvisioning } from './support/fixtures.js';

const cluster = useTestCluster();

describe('contract errors', () => {
  let harness: ChainHarness;

  beforeAll(async () => {
    const namespace = cluster.namespace;
    await createErrorCaseHosts(cluster.kubeConfig, namespace);
    harness = new ChainHarness(cluster.kubeConfig, { BMH_NAMESPACE: namespace, VM_NAMESPACES: namespace });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
  });
  afterAll(() => harness?.stop());

  it.each(contractErrorCases)(
    '$name → $reason',
    async ({ name, clusterType, masters, workers, reason, message }) => {
      const namespace = cluster.namespace;
      const created = await createProvisioning(
        cluster.kubeConfig,
        provisioningObject({
          name,
          namespace,
          cluster: name,
          masters,
          workers,
          ...(clusterType ? { clusterType } : {}),
        }),
      );
      const deliveries = await harness.publish(sourceEvent('add', created));
      expect(deliveries.map((d) => [d.target, d.status, d.reply?.type])).toEqual([
        ['host-lookup', 200, EventTypes.provisioningFailed],
      ]);
      expect(deliveries[0]?.reply?.data).toEqual({
        provisioning: { namespace, name, uid: created.metadata.uid, generation: 1 },
        cluster: name,
        step: 'HostsResolved',
        reason,
        message,
      });
      const status = await readProvisioning(cluster.kubeConfig, namespace, name);
      expect(conditionOf(status, 'HostsResolved')).toMatchObject({
        status: 'False',
        reason,
        message,
        observedGeneration: 1,
      });
      expect(conditionOf(status, 'Ready')).toMatchObject({ status: 'False', reason, message });
      const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
      const events = (await core.listNamespacedEvent({ namespace })).items.filter(
        (e) => e.involvedObject.name === name,
      );
      expect(events).toEqual([expect.objectContaining({ type: 'Warning', reason, message })]);
      const batch = cluster.kubeConfig.makeApiClient(BatchV1Api);
      expect((await batch.listNamespacedJob({ namespace, labelSelector: `cluster=${name}` })).items).toEqual(
        [],
      );

      // The status write comes back as an update event: handled already, nothing repeated.
      const again = await harness.publish(sourceEvent('update', status));
      expect(again.map((d) => d.status)).toEqual([204]);
    },
  );

  it('an invalid resource is a False condition, not an HTTP error', async () => {
    const namespace = cluster.namespace;
    const object = provisioningObject({
      name: 'bad-cluster-label',
      namespace,
      cluster: 'Not_A_DNS_Label',
      masters: [{ label: 'master-1', mac: 'ee:ee:00:00:00:01' }],
    });
    const created = await createProvisioning(cluster.kubeConfig, object);
    const [delivery] = await harness.publish(sourceEvent('add', created));
    expect(delivery?.status).toBe(200);
    expect(delivery?.reply?.type).toBe(EventTypes.provisioningFailed);
    const status = await readProvisioning(cluster.kubeConfig, namespace, 'bad-cluster-label');
    expect(conditionOf(status, 'HostsResolved')).toMatchObject({
      status: 'False',
      reason: 'InvalidProvisioning',
    });
    expect(conditionOf(status, 'HostsResolved')?.message).toMatch(
      /^Provisioning .*\/bad-cluster-label is invalid: metadata\.labels\.cluster: /,
    );
  });
});

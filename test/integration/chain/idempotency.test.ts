/**
 * Idempotency of the whole chain, on both engines (test/support/chain-engine.ts), driven through
 * the API server and the Broker's ingress only: the same spec applied again, a label-only update
 * and the same `add` event posted three times by hand (as `bpa send` would) launch no second Job
 * and write no second inventory; a spec change while the Job runs leaves that Job alone
 * (PreviousJobRunning) and the sweep replaces it once it finished, for the new generation.
 *
 * Real: kube-apiserver, etcd, Kubernetes' controllers and the node that runs the KUD Jobs' pods
 * from an image (a real kubelet and containerd, local/kubelet-node); on `knative`, Knative
 * Eventing (test/support/chain-engine.ts says what runs where).
 * IMITATION: the KUD installer is the test image bpa.local/test/kud-waits:1
 * (test/fixtures/node/kud-installers/waits), which exits with the code the suite releases it with;
 * the hosts are BareMetalHosts with inspected NICs (no hardware, no dhcpd).
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { encodeBinary } from '../../../shared/cloudevents/http-codec.js';
import { waitFor } from '../../../local/control-plane/wait.js';
import { makeApiServerEvent } from '../../../local/sources/apiserver-source.js';
import { inventoryConfigMapName, kudJobName } from '../../../shared/core/names.js';
import { describeOnEngines, useChainEngine, type ChainEngine } from '../../support/chain-engine.js';
import { createKudSshKeySecret, kudTestImage } from '../../support/node.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  provisioningObject,
  readProvisioning,
} from '../functions/support/fixtures.js';

const hosts = {
  steady: 'ab:ab:00:00:00:01',
  posted: 'ab:ab:00:00:00:02',
  grow: 'ab:ab:00:00:00:03',
  growWorker: 'ab:ab:00:00:00:04',
} as const;

describeOnEngines('idempotency of the chain', (engine) => {
  const chain: ChainEngine = useChainEngine(engine, {
    namespacePrefix: 'chain-idem',
    prepare: async ({ kubeConfig, namespace, functionsNamespace }) => {
      // The KUD Job runs in the functions' namespace and mounts the operator's key there.
      await createKudSshKeySecret(kubeConfig, functionsNamespace);
      let octet = 1;
      for (const [name, mac] of Object.entries(hosts))
        await createBareMetalHost(kubeConfig, {
          name: `${name.toLowerCase()}-host`,
          namespace,
          bootMac: mac,
          nics: [{ name: 'eth0', mac, ip: `10.30.0.${octet++}` }],
        });
    },
    config: ({ namespace }) => ({
      BMH_NAMESPACE: namespace,
      KUD_IMAGE: kudTestImage.waits,
      SWEEP_NAMESPACES: namespace,
    }),
  });
  const core = () => chain.kubeConfig.makeApiClient(CoreV1Api);
  const jobsOf = (clusterName: string) => chain.jobsOf(clusterName);
  const inventoriesOf = async (clusterName: string) =>
    (await core().listNamespacedConfigMap({ namespace: chain.namespace })).items.filter(
      (c) => c.metadata?.name === inventoryConfigMapName(clusterName),
    );
  const provisioning = (name: string, mac: string) =>
    provisioningObject({ name, namespace: chain.namespace, cluster: name, masters: [{ label: 'm', mac }] });
  const apply = (object: ReturnType<typeof provisioningObject>) =>
    chain.kubectl(['apply', '-f', '-'], JSON.stringify(object));
  /** host-lookup's `event` log lines for Provisioning `name` whose type ends in `.<verb>`. */
  const handled = async (name: string, verb: string) =>
    (await chain.functionLog('host-lookup')).filter(
      (l) =>
        l.msg === 'event' &&
        l.ce_type?.endsWith(`.${verb}`) === true &&
        l.namespace === chain.namespace &&
        l.name === name,
    );
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('the same spec applied again and a label-only update: no second Job, no second inventory', async () => {
    const object = provisioning('steady', hosts.steady);
    await apply(object);
    const launched = await chain.waitForCondition('steady', 'JobLaunched', 'True', 180_000);
    const [job] = await jobsOf('steady');
    const [inventory] = await inventoriesOf('steady');
    expect(job?.metadata?.name).toBe(kudJobName('steady'));
    expect(inventory).toBeDefined();

    // Unchanged: the API server writes nothing. A label: an update event through the source, the
    // broker and host-lookup's Trigger, generation unchanged.
    expect(await apply(object)).toMatch(/unchanged/);
    const updatesBefore = (await handled('steady', 'update')).length;
    await chain.kubectl(['-n', chain.namespace, 'label', 'provisioning', 'steady', 'touched=yes']);
    const updates = await waitFor(
      async () => {
        const lines = await handled('steady', 'update');
        return lines.length > updatesBefore ? lines : undefined;
      },
      { what: 'host-lookup to handle the update of steady', timeoutMs: 120_000, intervalMs: 1000 },
    );
    // Answered without a reply: nothing to re-drive for an unchanged generation.
    expect(updates.at(-1)).toMatchObject({ status: 204 });
    // And one sweep (every minute) after it: nothing new either.
    await sleep(70_000);

    const after = await readProvisioning(chain.kubeConfig, chain.namespace, 'steady');
    expect(after.metadata.generation).toBe(launched.metadata.generation);
    expect(conditionOf(after, 'JobLaunched')).toMatchObject({ status: 'True' });
    expect((await jobsOf('steady')).map((j) => j.metadata?.uid)).toEqual([job?.metadata?.uid]);
    expect((await inventoriesOf('steady')).map((c) => c.metadata?.uid)).toEqual([inventory?.metadata?.uid]);
  }, 420_000);

  it('the same add event posted three times to the Broker: one Job, one inventory', async () => {
    await apply(provisioning('posted', hosts.posted));
    await chain.waitForCondition('posted', 'JobLaunched', 'True', 180_000);
    const [job] = await jobsOf('posted');
    const [inventory] = await inventoriesOf('posted');
    const stored = (await chain.kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      ...bpaGroup,
      plural: 'provisionings',
      namespace: chain.namespace,
      name: 'posted',
    })) as never;
    // What Knative's ApiServerSource adapter sends, once with one id and twice with new ones.
    const event = makeApiServerEvent(chain.cluster.server, 'Resource', 'add', stored);
    const firstId = String(event.attributes['id']);
    for (const id of [firstId, firstId, randomUUID()]) {
      const message = encodeBinary({ ...event, attributes: { ...event.attributes, id } });
      const posted = await fetch(chain.ingressUrl, {
        method: 'POST',
        headers: message.headers,
        body: message.body,
      });
      expect(posted.status).toBe(202);
    }
    await waitFor(async () => ((await handled('posted', 'add')).length >= 4 ? true : undefined), {
      what: 'host-lookup to handle the three posted adds',
      timeoutMs: 120_000,
      intervalMs: 1000,
    });
    await sleep(5_000);
    expect((await jobsOf('posted')).map((j) => j.metadata?.uid)).toEqual([job?.metadata?.uid]);
    expect((await inventoriesOf('posted')).map((c) => c.metadata?.uid)).toEqual([inventory?.metadata?.uid]);
    expect(
      conditionOf(await readProvisioning(chain.kubeConfig, chain.namespace, 'posted'), 'JobLaunched'),
    ).toMatchObject({ status: 'True', observedGeneration: 1 });
  }, 300_000);

  it('a spec change while the Job runs: that Job is left alone, then replaced for the new generation', async () => {
    const { namespace } = chain;
    await apply(provisioning('grow', hosts.grow));
    await chain.waitForCondition('grow', 'JobLaunched', 'True', 180_000);
    const [first] = await jobsOf('grow');

    await apply({
      ...provisioning('grow', hosts.grow),
      spec: {
        ...provisioning('grow', hosts.grow).spec,
        workers: [{ w: { 'mac-address': hosts.growWorker } }],
      },
    });
    const blocked = await chain.waitForCondition('grow', 'JobLaunched', 'False', 180_000);
    expect(blocked.metadata.generation).toBe(2);
    expect(conditionOf(blocked, 'JobLaunched')).toMatchObject({
      reason: 'PreviousJobRunning',
      observedGeneration: 2,
    });
    expect(conditionOf(blocked, 'InventoryRendered')).toMatchObject({
      status: 'True',
      observedGeneration: 2,
    });
    expect((await jobsOf('grow')).map((j) => j.metadata?.uid)).toEqual([first?.metadata?.uid]);

    // The old Job finishes; its completion belongs to generation 1. The sweep re-drives the
    // launch, and the finished Job with the old inventory is replaced.
    await chain.releaseKudJob('grow', 0);
    const relaunched = await chain.waitForCondition('grow', 'JobLaunched', 'True', 240_000);
    expect(relaunched.metadata.generation).toBe(2);
    const jobs = await jobsOf('grow');
    expect(jobs).toHaveLength(1);
    expect(jobs[0]?.metadata?.uid).not.toBe(first?.metadata?.uid);
    expect(jobs[0]?.metadata?.annotations?.['bpa.akraino.org/provisioning-generation']).toBe('2');
    expect(conditionOf(relaunched, 'Ready')?.status).not.toBe('True');

    // The new Job's inventory names the worker; it succeeds and the cluster is Ready, generation 2.
    const [inventory] = await inventoriesOf('grow');
    expect(inventory?.data?.['hosts.ini']).toMatch(/\[kube-node\][^[]*\bw\b/);
    await chain.releaseKudJob('grow', 0);
    const ready = await chain.waitForCondition('grow', 'Ready', 'True', 240_000);
    expect(conditionOf(ready, 'Ready')).toMatchObject({ observedGeneration: 2 });
    const ips = await core().readNamespacedConfigMap({ name: 'grow-configmap', namespace });
    expect(Object.keys(ips.data ?? {}).sort()).toEqual(['MASTER_m', 'WORKER_w']);
  }, 720_000);
});

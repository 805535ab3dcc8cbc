/**
 * The contract's errors through the whole chain, on both engines (test/support/chain-engine.ts):
 * every error of contract section 5 ends as HostsResolved and Ready False with the exact message,
 * one Warning Event with a specific reason, and no Job; a host that appears later is picked up by
 * the sweep (the manifests' PingSource, once a minute); a KUD Job that fails ends as KudInstalled
 * and Ready False with the contract's message and the failed pod's name. Driven only through the
 * API server: the events come from the engine's ApiServerSources and PingSource.
 *
 * Real: kube-apiserver, etcd, Kubernetes' controllers and the node that runs the KUD Jobs' pods
 * from an image (a real kubelet and containerd, local/kubelet-node); on `knative`, Knative
 * Eventing (test/support/chain-engine.ts says what runs where).
 * IMITATION: the KUD installer is the test image bpa.local/test/kud-waits:1
 * (test/fixtures/node/kud-installers/waits), which exits with the code the suite releases it with;
 * the hosts are BareMetalHosts with inspected NICs and an ISC lease file written by the suite.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from '@jest/globals';
import { CoreV1Api } from '@kubernetes/client-node';
import { renderIscLeaseFile } from '../../../local/lab/lease-file.js';
import { waitFor } from '../../../local/control-plane/wait.js';
import { inventoryConfigMapName, kudJobName } from '../../../shared/core/names.js';
import { describeOnEngines, useChainEngine, type ChainEngine } from '../../support/chain-engine.js';
import { createKudSshKeySecret, kudTestImage } from '../../support/node.js';
import { createVmNamespaceRbac } from '../../support/vm-namespace.js';
import { contractErrorCases, createErrorCaseHosts } from '../functions/support/contract-errors.js';
import {
  conditionOf,
  createBareMetalHost,
  provisioningObject,
  readProvisioning,
} from '../functions/support/fixtures.js';

/** The host that appears later: the lease file has its IP from the start. */
const late = { label: 'late-1', mac: '52:54:00:c4:00:01', ip: '10.20.0.1' };

describeOnEngines('contract errors through the chain', (engine) => {
  const chain: ChainEngine = useChainEngine(engine, {
    namespacePrefix: 'chain-errors',
    prepare: async ({ kubeConfig, namespace, functionsNamespace, workDir }) => {
      // The KUD Job runs in the functions' namespace and mounts the operator's key there.
      await createKudSshKeySecret(kubeConfig, functionsNamespace);
      await writeFile(
        join(workDir, 'dhcpd.leases'),
        renderIscLeaseFile([{ ...late, role: 'master', bmhName: 'late-host', inLeaseFile: true }]),
      );
      await createErrorCaseHosts(kubeConfig, namespace);
      // No Role for the VM namespace yet: the first test shows what an operator who forgot it sees.
    },
    config: ({ namespace, workDir }) => ({
      BMH_NAMESPACE: namespace,
      VM_NAMESPACES: namespace,
      LEASES_SOURCE: join(workDir, 'dhcpd.leases'),
      KUD_IMAGE: kudTestImage.waits,
      SWEEP_NAMESPACES: namespace,
    }),
  });
  const core = () => chain.kubeConfig.makeApiClient(CoreV1Api);
  const jobsOf = (clusterName: string) => chain.jobsOf(clusterName);
  const warningsOf = async (name: string) =>
    (await core().listNamespacedEvent({ namespace: chain.namespace })).items
      .filter((e) => e.involvedObject.name === name)
      .map((e) => ({ type: e.type, reason: e.reason, message: e.message }));
  const apply = (object: ReturnType<typeof provisioningObject>) =>
    chain.kubectl(['apply', '-f', '-'], JSON.stringify(object));

  it('a VM namespace without its Role: refused, said on status, dead-lettered; the sweep finishes once the Role is added', async () => {
    // host-lookup lists a VM namespace's pods only with the Role docs/deploy.md ("Hosts and VM
    // namespaces") tells the operator to add; on both engines it acts as its ServiceAccount.
    const { namespace } = chain;
    await apply(
      provisioningObject({
        name: 'vm-refused',
        namespace,
        cluster: 'vm-refused',
        clusterType: 'virtlet-vm',
        masters: [{ label: 'vm-1', mac: 'ee:ee:00:00:00:78' }],
      }),
    );
    const refused = await chain.waitForCondition('vm-refused', 'HostsResolved', 'Unknown', 120_000);
    expect(conditionOf(refused, 'HostsResolved')).toMatchObject({ reason: 'KubernetesForbidden' });
    expect(conditionOf(refused, 'HostsResolved')?.message).toMatch(
      /^Kubernetes API refused to .*"system:serviceaccount:bpa-system:host-lookup" cannot list resource "pods".*\(will be retried\)$/,
    );
    // The Trigger's retries (5, exponential from 0.5 s) run out: the add reaches the dead letters.
    const deadLetter = await waitFor(
      async () =>
        (await chain.deadLetters()).find(
          (d) =>
            d.type === 'dev.knative.apiserver.resource.add' &&
            d.subject?.endsWith('/provisionings/vm-refused'),
        ),
      { what: 'the dead letter of vm-refused', timeoutMs: 120_000, intervalMs: 1000 },
    );
    // The whole letter on a mismatch: one without a code never went through the Trigger's retries.
    expect(deadLetter).toMatchObject({ errorCode: '500' });
    expect(await jobsOf('vm-refused')).toEqual([]);

    // The operator adds the Role; the sweep (once a minute) resolves again: no such VM.
    await createVmNamespaceRbac(chain.kubeConfig, namespace);
    const failed = await chain.waitForCondition('vm-refused', 'HostsResolved', 'False', 180_000);
    expect(conditionOf(failed, 'HostsResolved')).toMatchObject({
      reason: 'VmNotFound',
      message: 'IP address not found for VM with MAC address ee:ee:00:00:00:78',
    });
  }, 420_000);

  it('every contract error: HostsResolved and Ready False with its message, one Warning Event, no Job', async () => {
    const { namespace } = chain;
    for (const { name, clusterType, masters, workers } of contractErrorCases)
      await apply(
        provisioningObject({
          name,
          namespace,
          cluster: name,
          masters,
          ...(workers ? { workers } : {}),
          ...(clusterType ? { clusterType } : {}),
        }),
      );
    for (const { name, reason, message } of contractErrorCases) {
      const failed = await chain.waitForCondition(name, 'HostsResolved', 'False', 120_000);
      expect([name, conditionOf(failed, 'HostsResolved')]).toEqual([
        name,
        expect.objectContaining({ reason, message, observedGeneration: 1 }),
      ]);
      expect([name, conditionOf(failed, 'Ready')]).toEqual([
        name,
        expect.objectContaining({ status: 'False', reason, message }),
      ]);
    }
    // One Event each, after the status writes came back as update events and the sweep ran at
    // least once: it retries what the world can fix (HostNotFound...; shared/reasons.ts), and a
    // repeat of the same Event bumps its count.
    await new Promise((resolve) => setTimeout(resolve, 65_000));
    for (const { name, reason, message } of contractErrorCases) {
      expect([name, await warningsOf(name)]).toEqual([name, [{ type: 'Warning', reason, message }]]);
      expect([name, await jobsOf(name)]).toEqual([name, []]);
      const after = await readProvisioning(chain.kubeConfig, namespace, name);
      expect([name, conditionOf(after, 'HostsResolved')?.status]).toEqual([name, 'False']);
    }
  }, 420_000);

  it('an invalid resource is a False condition (InvalidProvisioning), not a retried error', async () => {
    await apply(
      provisioningObject({
        name: 'bad-cluster-label',
        namespace: chain.namespace,
        cluster: 'Not_A_DNS_Label',
        masters: [{ label: 'master-1', mac: 'ee:ee:00:00:00:01' }],
      }),
    );
    const failed = await chain.waitForCondition('bad-cluster-label', 'HostsResolved', 'False', 120_000);
    expect(conditionOf(failed, 'HostsResolved')).toMatchObject({ reason: 'InvalidProvisioning' });
    expect(conditionOf(failed, 'HostsResolved')?.message).toMatch(
      /^Provisioning .*\/bad-cluster-label is invalid: metadata\.labels\.cluster: /,
    );
    expect((await chain.deadLetters()).filter((d) => d.subject?.endsWith('/bad-cluster-label'))).toEqual([]);
  }, 180_000);

  it('a MAC no BareMetalHost has: HostNotFound; once the host appears the sweep takes it to JobLaunched', async () => {
    const { namespace } = chain;
    await apply(
      provisioningObject({
        name: 'late',
        namespace,
        cluster: 'late',
        masters: [{ label: late.label, mac: late.mac }],
      }),
    );
    const message = `Host with MAC Address ${late.mac} not found`;
    const failed = await chain.waitForCondition('late', 'HostsResolved', 'False', 120_000);
    expect(conditionOf(failed, 'HostsResolved')).toMatchObject({ reason: 'HostNotFound', message });
    expect(await jobsOf('late')).toEqual([]);

    // The host appears (no IP on its NIC: the lease file has it). No event names the
    // Provisioning, so only the sweep can re-drive it.
    await createBareMetalHost(chain.kubeConfig, {
      name: 'late-host',
      namespace,
      bootMac: late.mac,
      nics: [],
    });
    const launched = await chain.waitForCondition('late', 'JobLaunched', 'True', 180_000);
    expect(conditionOf(launched, 'HostsResolved')).toMatchObject({ status: 'True' });
    expect(launched.status?.nodes).toEqual([
      expect.objectContaining({ label: late.label, mac: late.mac, ip: late.ip }),
    ]);
    const inventory = await core().readNamespacedConfigMap({
      name: inventoryConfigMapName('late'),
      namespace,
    });
    expect(inventory.data?.['hosts.ini']).toContain(late.ip);
    const [job] = await jobsOf('late');
    expect(job?.metadata?.name).toBe(kudJobName('late'));
    expect(job?.spec?.template.spec?.containers[0]?.image).toBe(kudTestImage.waits);
    await chain.releaseKudJob('late', 0);
    await chain.waitForCondition('late', 'Ready', 'True', 180_000);
  }, 480_000);

  it('a failing KUD Job: KudInstalled and Ready False (JobFailed) with the contract message, a Warning Event', async () => {
    const { namespace } = chain;
    // A host of its own: the error cases' hosts are held by the no-ip case, which claims them
    // before it looks for IPs (contract section 13: claimed, provisioned, then addressed).
    await createBareMetalHost(chain.kubeConfig, {
      name: 'doomed-host',
      namespace,
      bootMac: 'ee:ee:00:00:00:0d',
      nics: [{ name: 'eth0', mac: 'ee:ee:00:00:00:0d', ip: '10.0.0.13' }],
    });
    await apply(
      provisioningObject({
        name: 'doomed',
        namespace,
        cluster: 'doomed',
        masters: [{ label: 'doomed-1', mac: 'ee:ee:00:00:00:0d' }],
      }),
    );
    await chain.waitForCondition('doomed', 'JobLaunched', 'True', 180_000);
    await chain.releaseKudJob('doomed', 1);
    const failed = await chain.waitForCondition('doomed', 'KudInstalled', 'False', 180_000);
    const [pod] = (
      await core().listNamespacedPod({
        namespace: chain.functionsNamespace,
        labelSelector: 'job-name=kud-doomed',
      })
    ).items;
    expect(pod?.metadata?.name).toMatch(/^kud-doomed-[a-z0-9]{5}$/);
    const message = `Job Failed, KUD not installed in Cluster doomed, check pod logs (pod ${pod?.metadata?.name})`;
    expect(conditionOf(failed, 'KudInstalled')).toMatchObject({ status: 'False', message });
    const ready = await chain.waitForCondition('doomed', 'Ready', 'False', 60_000);
    expect(conditionOf(ready, 'Ready')).toMatchObject({ reason: 'JobFailed', message });
    const [job] = await jobsOf('doomed');
    expect(job?.status?.conditions?.find((c) => c.type === 'Failed')).toMatchObject({
      status: 'True',
      reason: 'BackoffLimitExceeded',
    });
    // The Event is written after the status: wait for it, then there is exactly one.
    const jobFailedEvents = await waitFor(
      async () => {
        const events = (await warningsOf('doomed')).filter((e) => e.reason === 'JobFailed');
        return events.length > 0 ? events : undefined;
      },
      { what: 'the JobFailed Event of doomed', timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(jobFailedEvents).toEqual([{ type: 'Warning', reason: 'JobFailed', message }]);
    await expect(
      core().readNamespacedConfigMap({ name: 'doomed-configmap', namespace }),
    ).rejects.toMatchObject({ code: 404 });
  }, 420_000);
});

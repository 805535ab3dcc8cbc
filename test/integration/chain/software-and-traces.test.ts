/**
 * Software installed through the whole chain, and one trace across the chain, on both engines
 * (test/support/chain-engine.ts), driven only through the API server and, for the trace, one
 * CloudEvent posted to the Broker's ingress as `bpa send` would.
 *
 * 1. The demo's lab (local/lab): a Provisioning and a Software of its three hosts, applied with
 *    kubectl. The ApiServerSource's events take the Provisioning to Ready (the KUD Job runs on the
 *    node), cluster.ready takes the Software to software-install, which creates the install Job;
 *    its pod reaches the hosts over SSH and records the outcome; the Software is Ready with one Normal Event, and each host received exactly the apt-get
 *    command of its role (the Software's masterSoftware / workerSoftware).
 * 2. Namespace B: a Provisioning of the same hosts, outside SWEEP_NAMESPACES (no sweep drives it).
 *    The test posts its `add` with a W3C traceparent of a trace id made here; the ApiServerSource
 *    sends its own `add` too (on both engines, also for an object that existed before the source
 *    started, which is why B is created in the test), and whichever event host-lookup takes
 *    first starts the chain (the source's add, the posted one, or the update that host-lookup's
 *    first status write causes); the others find the step taken. Which one it was is read from B's status (the
 *    cause recorded for HostsResolved, from which hosts.resolved's id is derived), and its trace
 *    must then be on every step up to cluster.ready, on the Job's annotation and in
 *    software-install. Each add starts a trace of its own (128 random bits), so one trace id on
 *    all of them cannot happen by accident; the posted add must reach host-lookup in the known
 *    trace either way. A recorder Trigger (empty filter) shows what subscribers got.
 *
 * Trace context, as each engine really carries it (docs/knative.md "Trace context"): the
 * distributed-tracing extension (`ce-traceparent`) is the functions' and travels untouched on
 * both. The `traceparent` header is the broker's: Knative v0.49.2 as installed here (tracing
 * off) forwards it byte for byte and starts none; the embedded broker sends a child span id per
 * hop and starts a trace when none came in (Knative with tracing on). On both, a reply goes on in
 * the trace of the delivery that produced it: cluster.ready, the answer to the Job's update (which
 * the ApiServerSource sends without trace context), carries the Provisioning's trace only in its
 * extension, and software-install continues it from there.
 *
 * Real: kube-apiserver, etcd, Kubernetes' Job controller, the node (a real kubelet and
 * containerd, local/kubelet-node) running the KUD, install and recorder pods from their images,
 * OpenSSH sshd (one per lab host, in its own network namespace on the node's lab bridge), Ansible
 * in the KUD installer stand-in, the install Job's code (dist/bundle/software-install-job.mjs), on
 * `knative` Knative Eventing v0.49.2 and the functions as pods.
 * IMITATION: the lab's hosts record their apt-get commands and answer them, they never run them
 * (local/lab/openssh-hosts.ts `lab`); the KUD installer is the demo's stand-in
 * (local/kud-stand-in: it checks the inventory and pings every host, it installs nothing); on
 * `knative` the Knative Services run as Deployments (the local Serving overlay); the hosts are
 * BareMetalHosts with inspected NICs and a DHCP lease file, no hardware.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from '@jest/globals';
import { BatchV1Api, CoreV1Api, CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { repoRoot } from '../../../local/control-plane/repo-root.js';
import {
  createNamespace,
  onboardNamespace,
  uniqueNamespaceName,
  waitFor,
} from '../../../local/control-plane/index.js';
import { startLab, type Lab } from '../../../local/lab/lab.js';
import { labHosts, labProvisioning, labSoftware } from '../../../local/lab/lab-definition.js';
import { makeApiServerEvent } from '../../../local/sources/apiserver-source.js';
import { stackBrokerName, stackNamespace } from '../../../local/stack/index.js';
import { packageSpecsFromItems, packageWord } from '../../../functions/software-install/ssh/command.js';
import { startCommand } from '../../../functions/software-install/ssh/detached.js';
import { decodeHttpEvent, encodeBinary, type RawEvent } from '../../../shared/cloudevents/http-codec.js';
import { EventTypes, SourceEventTypes, softwareSubject } from '../../../shared/events/types.js';
import { replyIdFor, stepCausesField } from '../../../shared/k8s/step-causes.js';
import { traceIdOf } from '../../../shared/telemetry/tracing.js';
import { describeOnEngines, useChainEngine, type ChainEngine } from '../../support/chain-engine.js';
import { startRecorder, type Recorder, type RecordedRequest } from '../../support/knative-objects.js';
import {
  bpaGroup,
  conditionOf,
  readProvisioning,
  type StoredCondition,
} from '../functions/support/fixtures.js';

const clusterA = 'edge-a';
const clusterB = 'edge-b';
const softwareName = `${clusterA}-tools`;

interface StoredSoftware {
  metadata: { name: string; generation: number };
  spec: { masterSoftware: unknown[]; workerSoftware: unknown[] };
  status?: {
    conditions?: StoredCondition[];
    hosts?: { node: string; ip: string; exitCode: number | null; packages: string[] }[];
    installJob?: string;
  };
}

/** One request the recorder got, decoded. */
interface Received {
  event: RawEvent;
  /** The `traceparent` HTTP header as it arrived. */
  header?: string;
  /** The distributed-tracing extension as it arrived. */
  extension?: string;
}

/** A detached install's start command (ssh/detached.ts) with its install id left out. */
const withoutInstallId = (command: string) => command.replace(/ sh '[0-9a-f]{24}' /, " sh '<id>' ");

const firstValue = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

function decode(request: RecordedRequest): Received {
  const event = decodeHttpEvent(request.headers, Buffer.from(request.body, 'utf8'));
  const header = firstValue(request.headers['traceparent']);
  const extension = event.attributes['traceparent'];
  return {
    event,
    ...(header !== undefined ? { header } : {}),
    ...(typeof extension === 'string' ? { extension } : {}),
  };
}

describeOnEngines('software install and one trace through the chain', (engine) => {
  let lab: Lab | undefined;
  let recorder: Recorder | undefined;
  let traceNamespace = '';
  const chain: ChainEngine = useChainEngine(engine, {
    namespacePrefix: 'chain-software',
    prepare: async ({ cluster, kubeConfig, namespace, functionsNamespace, observerNamespace }) => {
      if (!existsSync(join(repoRoot(), 'dist/bundle/software-install-job.mjs')))
        throw new Error('dist/bundle/software-install-job.mjs is missing: run npm run build first');
      // The namespaces' default ServiceAccounts exist by now (useChainEngine waits for them).
      // Not in the tenant's namespace (Pod Security restricted): the recorder meets no level.
      recorder = await startRecorder(kubeConfig, observerNamespace).catch(async (error: unknown) => {
        // What the cluster says about it: the reason is in these (pods, their conditions, Events).
        const core = kubeConfig.makeApiClient(CoreV1Api);
        const pods = (await core.listNamespacedPod({ namespace: observerNamespace })).items.map((p) => ({
          name: p.metadata?.name,
          node: p.spec?.nodeName,
          phase: p.status?.phase,
          ip: p.status?.podIP,
          conditions: p.status?.conditions?.map((c) => `${c.type}=${c.status}`),
          // Reason and message: ContainerCreating alone does not say what the node waits for.
          waiting: p.status?.containerStatuses?.map((c) =>
            [c.state?.waiting?.reason ?? c.state?.terminated?.reason, c.state?.waiting?.message]
              .filter(Boolean)
              .join(': '),
          ),
        }));
        const events = (await core.listNamespacedEvent({ namespace: observerNamespace })).items.map(
          (e) => `${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}: ${e.message}`,
        );
        throw new Error(
          `${(error as Error).message}; pods ${JSON.stringify(pods)}; events ${JSON.stringify(events)}`,
        );
      });
      lab = await startLab({ namespace, network: cluster.nodeNetwork! });
      await lab.applyToCluster(kubeConfig);
      // Every KUD Job (A's and B's) runs in the functions' namespace and mounts the key there.
      await lab.applySshKeySecret(kubeConfig, functionsNamespace);
      // B's tenant namespace: restricted too, as every tenant's (issue 23 item 1).
      traceNamespace = await createNamespace(kubeConfig, uniqueNamespaceName('chain-trace'), {
        'pod-security.kubernetes.io/enforce': 'restricted',
      });
      await onboardNamespace(kubeConfig, traceNamespace, { functionsNamespace: stackNamespace });
    },
    cleanup: async () => {
      await lab?.stop();
    },
    config: ({ namespace }) => ({
      ...Object.fromEntries(
        Object.entries(lab!.functionsEnv).filter(
          (entry): entry is [string, string] => entry[1] !== undefined,
        ),
      ),
      // Not B's namespace: only the posted event may drive B.
      SWEEP_NAMESPACES: namespace,
    }),
    extraObjects: () => [
      {
        apiVersion: 'eventing.knative.dev/v1',
        kind: 'Trigger',
        metadata: { name: 'chain-recorder', namespace: stackNamespace },
        spec: { broker: stackBrokerName, subscriber: { uri: recorder!.baseUrl } },
      } as KubernetesObject,
    ],
  });
  const custom = () => chain.kubeConfig.makeApiClient(CustomObjectsApi);
  const core = () => chain.kubeConfig.makeApiClient(CoreV1Api);
  const batch = () => chain.kubeConfig.makeApiClient(BatchV1Api);
  const apply = (object: KubernetesObject) => chain.kubectl(['apply', '-f', '-'], JSON.stringify(object));
  const received = async () => (await recorder!.received()).map(decode);
  const readSoftware = async () =>
    (await custom().getNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace: chain.namespace,
      name: softwareName,
    })) as StoredSoftware;

  it('installs the Software of a Ready cluster: install Job on the node, apt-get per role on each host, Ready, one Event', async () => {
    const { namespace } = chain;
    const software = labSoftware(namespace, clusterA) as KubernetesObject & StoredSoftware;
    await apply(software);
    await apply(labProvisioning(namespace, clusterA));

    const provisioning = await chain.waitForCondition(clusterA, 'Ready', 'True', 300_000);
    expect(conditionOf(provisioning, 'KudInstalled')).toMatchObject({ status: 'True' });
    const installed = await waitFor(
      async () => {
        const current = await readSoftware();
        const ready = current.status?.conditions?.find((c) => c.type === 'Ready');
        // ClusterNotReady (False) until cluster.ready arrives, Installing (Unknown) while the Job runs.
        const decided = ready && ready.status !== 'Unknown' && ready.reason !== 'ClusterNotReady';
        return decided ? current : undefined;
      },
      { what: `Software ${namespace}/${softwareName} Ready decided`, timeoutMs: 300_000, intervalMs: 1000 },
    );
    const conditions = installed.status?.conditions ?? [];
    expect(conditions.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Installed' });
    expect(conditions.find((c) => c.type === 'Installed')).toMatchObject({
      status: 'True',
      reason: 'Installed',
      observedGeneration: installed.metadata.generation,
    });

    // What the Software's spec asks for, per role, as software-install renders it.
    const rolePackages = {
      master: packageSpecsFromItems(software.spec.masterSoftware),
      worker: packageSpecsFromItems(software.spec.workerSoftware),
    };
    const hostsByLabel = new Map(lab!.hosts.map((h) => [h.label, h]));
    expect(
      (installed.status?.hosts ?? [])
        .map((h) => ({ node: h.node, ip: h.ip, exitCode: h.exitCode, packages: h.packages }))
        .sort((a, b) => a.node.localeCompare(b.node)),
    ).toEqual(
      labHosts.map((h) => ({
        node: h.label,
        ip: hostsByLabel.get(h.label)!.ip,
        exitCode: 0,
        packages: rolePackages[h.role].map((p) => (p.version ? `${p.name}=${p.version}` : p.name)),
      })),
    );

    // The install Job ran to completion on the node, as its own ServiceAccount.
    const jobName = installed.status?.installJob ?? '';
    expect(jobName).toBe(`${softwareName}-install-1`);
    // The pod records the outcome before it exits; the Job controller marks the Job after.
    const job = await waitFor(
      async () => {
        const read = await batch().readNamespacedJob({ name: jobName, namespace });
        return read.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')
          ? read
          : undefined;
      },
      { what: `Job ${jobName} Complete`, timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(job.status?.succeeded).toBe(1);
    expect(job.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ status: 'True' });
    const pods = await core().listNamespacedPod({ namespace, labelSelector: `job-name=${jobName}` });
    expect(pods.items.map((p) => [p.spec?.nodeName, p.spec?.serviceAccountName, p.status?.phase])).toEqual([
      [chain.cluster.kubeletNode!.name, `${softwareName}-installer`, 'Succeeded'],
    ]);

    // On each host, exactly the apt-get of its role, started once, detached (contract section
    // 12: apt runs on the host and is polled; the lab's sshd records the start, not the polls,
    // and does not run apt).
    const aptByIp = new Map<string, string[]>();
    for (const { ip, command } of lab!.commands())
      if (command.includes('apt-get'))
        aptByIp.set(ip, [...(aptByIp.get(ip) ?? []), withoutInstallId(command)]);
    expect(Object.fromEntries(aptByIp)).toEqual(
      Object.fromEntries(
        lab!.hosts.map((h) => [
          h.ip,
          [
            startCommand({
              id: '<id>',
              words: [...new Set(rolePackages[h.role].map(packageWord))],
              username: 'root',
            }),
          ],
        ]),
      ),
    );

    // One Normal Event for the install, no Warning.
    const events = (await core().listNamespacedEvent({ namespace })).items.filter(
      (e) => e.involvedObject.kind === 'Software' && e.involvedObject.name === softwareName,
    );
    expect(events.filter((e) => e.type === 'Warning').map((e) => e.reason)).toEqual([]);
    expect(events.filter((e) => e.reason === 'Installed').map((e) => [e.type, e.count ?? 1])).toEqual([
      ['Normal', 1],
    ]);
    // Announced on the Broker: software.installed for it, one event (one id, however often delivered).
    const announced = await waitFor(
      async () => {
        const found = (await received()).filter(
          (r) =>
            r.event.attributes.type === EventTypes.softwareInstalled &&
            r.event.attributes.subject === softwareSubject(namespace, softwareName),
        );
        return found.length > 0 ? found : undefined;
      },
      { what: 'software.installed at the recorder', timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(new Set(announced.map((r) => r.event.attributes.id)).size).toBe(1);
  }, 720_000);

  it('keeps one trace from the add that started the chain through every step to cluster.ready, across the KUD Job', async () => {
    const knownTraceId = randomBytes(16).toString('hex');
    const knownTraceparent = `00-${knownTraceId}-${randomBytes(8).toString('hex')}-01`;
    // B names the lab's hosts, and a host serves one Provisioning at a time (its BareMetalHost's
    // spec.consumerRef, ADR 0013): A goes first, and with it its claims on the hosts.
    await chain.kubectl(['delete', 'software', softwareName, '-n', chain.namespace, '--ignore-not-found']);
    await chain.kubectl(['delete', 'provisioning', clusterA, '-n', chain.namespace, '--wait=false']);
    await waitFor(
      () =>
        custom()
          .getNamespacedCustomObject({
            ...bpaGroup,
            plural: 'provisionings',
            namespace: chain.namespace,
            name: clusterA,
          })
          .then(() => undefined)
          .catch((error: unknown) => ((error as { code?: number }).code === 404 ? true : undefined)),
      { what: `Provisioning ${chain.namespace}/${clusterA} gone`, timeoutMs: 300_000, intervalMs: 1000 },
    );
    await apply(labProvisioning(traceNamespace, clusterB));
    const stored = (await custom().getNamespacedCustomObject({
      ...bpaGroup,
      plural: 'provisionings',
      namespace: traceNamespace,
      name: clusterB,
    })) as never;
    // What the ApiServerSource adapter sends for it, in a trace the test knows. The source sends
    // its own `add` too, which usually reaches host-lookup first; the loser is answered 204.
    const add = makeApiServerEvent(chain.cluster.server, 'Resource', 'add', stored);
    const message = encodeBinary(add);
    const posted = await fetch(chain.ingressUrl, {
      method: 'POST',
      headers: { ...message.headers, traceparent: knownTraceparent },
      body: message.body,
    });
    expect(posted.status).toBe(202);

    const ready = await waitFor(
      async () => {
        const current = await readProvisioning(chain.kubeConfig, traceNamespace, clusterB);
        if (conditionOf(current, 'Ready')?.status === 'True') return current;
        // Not yet: what the conditions say, for the timeout's message.
        const conditions =
          (
            current as {
              status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
            }
          ).status?.conditions ?? [];
        throw new Error(
          conditions.map((c) => `${c.type}=${c.status} ${c.reason ?? ''}: ${c.message ?? ''}`).join('; ') ||
            'no conditions',
        );
      },
      {
        what: `Ready True on Provisioning ${traceNamespace}/${clusterB}`,
        timeoutMs: 300_000,
        intervalMs: 1000,
      },
    );
    const subject = `namespaces/${traceNamespace}/provisionings/${clusterB}`;
    const all = await waitFor(
      async () => {
        const now = await received();
        return now.some(
          (r) =>
            r.event.attributes.type === EventTypes.clusterReady && r.event.attributes.subject === subject,
        )
          ? now
          : undefined;
      },
      { what: 'cluster.ready of B at the recorder', timeoutMs: 120_000, intervalMs: 1000 },
    );

    // Which add started the chain: the one host-lookup recorded as the cause of HostsResolved.
    const adds = all.filter(
      (r) =>
        r.event.attributes.type === SourceEventTypes.resourceAdd && r.event.attributes['name'] === clusterB,
    );
    const postedId = String(add.attributes.id);
    expect(adds.map((r) => r.event.attributes.id)).toContain(postedId);
    const cause = (
      ready.status as Record<string, Record<string, { source: string; id: string }>> | undefined
    )?.[stepCausesField]?.['HostsResolved'];
    // Usually the source's add; it may also be an update (host-lookup's first status write comes
    // back as one while the add is still being handled) or the posted add.
    const winner = all.find(
      (r) =>
        r.event.attributes.id === cause?.id &&
        r.event.attributes.source === cause?.source &&
        r.event.attributes['name'] === clusterB,
    );
    expect(winner).toBeDefined();
    const hostLookupLines = (await chain.functionLog('host-lookup')).filter(
      (l) => l.msg === 'event' && l.namespace === traceNamespace && l.name === clusterB,
    );
    const lineOf = (id: unknown) => hostLookupLines.find((l) => l.ce_id === id);
    // The posted add reached host-lookup in the known trace, header as each engine carries it.
    expect(lineOf(postedId)?.trace_id).toBe(knownTraceId);
    const postedAtRecorder = adds.find((r) => r.event.attributes.id === postedId);
    if (engine === 'knative') expect(postedAtRecorder?.header).toBe(knownTraceparent);
    else {
      expect(traceIdOf(postedAtRecorder?.header)).toBe(knownTraceId);
      expect(postedAtRecorder?.header).not.toBe(knownTraceparent);
    }
    // The chain's trace: the one host-lookup handled the winning add in (random for the source's:
    // its adapter sends none, host-lookup or the embedded broker starts one).
    const chainTrace = lineOf(winner?.event.attributes.id)?.trace_id;
    expect(chainTrace).toMatch(/^[0-9a-f]{32}$/);
    if (winner?.event.attributes.id === postedId) expect(chainTrace).toBe(knownTraceId);
    else expect(chainTrace).not.toBe(knownTraceId);

    const chainOfB = all.filter((r) => r.event.attributes.subject === subject);
    const steps = [
      EventTypes.hostsResolved,
      EventTypes.inventoryRendered,
      EventTypes.kudJobLaunched,
      EventTypes.clusterReady,
    ];
    expect([...new Set(chainOfB.map((r) => r.event.attributes.type))].sort()).toEqual([...steps].sort());
    // One chain: every hosts.resolved of B is the winner's reply (its id derives from the cause).
    const resolvedIds = chainOfB
      .filter((r) => r.event.attributes.type === EventTypes.hostsResolved)
      .map((r) => r.event.attributes.id);
    expect(new Set(resolvedIds)).toEqual(new Set([replyIdFor('HostsResolved', cause)]));
    // Every step in the chain's trace: the extension on all four; the header (the broker's) up to
    // the Job is the winning add's as it reached the recorder.
    for (const step of chainOfB)
      expect([step.event.attributes.type, traceIdOf(step.extension)]).toEqual([
        step.event.attributes.type,
        chainTrace,
      ]);
    for (const step of chainOfB.filter((r) => r.event.attributes.type !== EventTypes.clusterReady))
      expect([step.event.attributes.type, traceIdOf(step.header)]).toEqual([
        step.event.attributes.type,
        traceIdOf(winner?.header),
      ]);

    // cluster.ready answers the Job's update, which came in a trace of its own (the
    // ApiServerSource sends none; the embedded broker starts one): kud-job-launch continued the
    // trace annotated on the Job in the reply's extension, the broker carries the update's.
    const jobName = `kud-${clusterB}`;
    const job = await batch().readNamespacedJob({ name: jobName, namespace: chain.functionsNamespace });
    expect(traceIdOf(job.metadata?.annotations?.['bpa.akraino.org/traceparent'])).toBe(chainTrace);
    // The update of B's Job, which runs in the functions' namespace (contract section 12).
    const finished = (await chain.functionLog('kud-job-launch')).filter(
      (l) =>
        l.msg === 'event' &&
        l.ce_type === SourceEventTypes.resourceUpdate &&
        l.namespace === chain.functionsNamespace &&
        l.name === jobName &&
        l['reply_type'] === EventTypes.clusterReady,
    );
    expect(finished.length).toBeGreaterThanOrEqual(1);
    expect(finished.map((l) => l.trace_id)).toEqual(finished.map(() => chainTrace));
    const completion = all.find(
      (r) =>
        r.event.attributes.type === SourceEventTypes.resourceUpdate &&
        r.event.attributes.id === finished[0]!.ce_id,
    );
    expect(completion?.event.attributes['name']).toBe(jobName);
    for (const readyEvent of chainOfB.filter((r) => r.event.attributes.type === EventTypes.clusterReady)) {
      if (engine === 'knative')
        expect([completion?.header, readyEvent.header]).toEqual([undefined, undefined]);
      else {
        expect(traceIdOf(readyEvent.header)).toBe(traceIdOf(completion?.header));
        expect(traceIdOf(readyEvent.header)).not.toBe(chainTrace);
      }
    }
    // software-install took cluster.ready in the chain's trace (from the extension).
    const softwareLines = (await chain.functionLog('software-install')).filter(
      (l) => l.msg === 'event' && l.ce_type === EventTypes.clusterReady && l.namespace === traceNamespace,
    );
    expect(softwareLines.length).toBeGreaterThanOrEqual(1);
    expect(softwareLines.map((l) => l.trace_id)).toEqual(softwareLines.map(() => chainTrace));
  }, 780_000);
});

/**
 * Observability of a real chain run: the embedded stack (`startStack`: broker from the
 * manifests' Broker and Triggers, the four function servers, local ApiServerSources) on this
 * file's own one-machine cluster, whose Job controller and real node (kubelet + containerd,
 * local/kubelet-node) run the KUD Jobs from the project's kud-stand-in image (real ansible-playbook
 * pings the lab's hosts), and the demo's lab (lease file, BareMetalHosts, real sshd hosts on the
 * node's lab bridge; their apt-get is recorded, not run).
 *
 *   namespace A: a Provisioning and a Software driven by the ApiServerSource, to Ready;
 *   namespace B: a Provisioning whose `add` event the test posts itself with a known
 *                traceparent (B is not watched for Provisionings), to cluster.ready.
 *
 * B names A's hosts, and a host serves one Provisioning at a time (contract section 12): A's
 * Software and Provisioning are deleted first (the cleanup Job runs on the node), driven by
 * posted pings as the manifests' PingSource would (this stack has none).
 *
 * Then: every function's and the broker's /metrics carry the runtime, domain and dispatch
 * metrics with their labels; the known trace id is on every chain event of B up to
 * cluster.ready although the Job's completion arrives in a trace of its own; every metric the
 * Grafana dashboard queries (and every one manifests/observability/metrics.json lists) is
 * exported by the running processes; every request log line carries its trace id.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import {
  BatchV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { encodeBinary } from '../../../shared/cloudevents/http-codec.js';
import { applyObject } from '../../../local/control-plane/apply.js';
import { freeLoopbackPort } from '../../../local/control-plane/free-port.js';
import { createNamespace, uniqueNamespaceName } from '../../../local/control-plane/namespaces.js';
import { repoRoot } from '../../../local/control-plane/repo-root.js';
import { startLab, type Lab } from '../../../local/lab/lab.js';
import { labProvisioning, labSoftware } from '../../../local/lab/lab-definition.js';
import { makeApiServerEvent } from '../../../local/sources/apiserver-source.js';
import { makePingEvent } from '../../../local/sources/ping-source.js';
import { stackNamespace, startStack, type Stack } from '../../../local/stack/index.js';
import { EventTypes, SourceEventTypes, softwareSubject } from '../../../shared/events/types.js';
import { traceIdOf } from '../../../shared/telemetry/tracing.js';
import { useNodeCluster } from '../../support/node-cluster.js';
import { eventually } from './support/eventually.js';
import { EventRecorder, type RecordedEvent } from './support/event-recorder.js';
import { merge, metricOfSeries, scrape, sumOf, type Exposition } from './support/prometheus-text.js';
import { seriesUses } from './support/promql-series.js';
import { writeStackManifests } from './support/stack-manifests.js';

const cluster = useNodeCluster({ namespacePrefix: 'obs-chain' });
const functionNames = ['host-lookup', 'inventory-render', 'kud-job-launch', 'software-install'] as const;
type FunctionName = (typeof functionNames)[number];

let dir: string;
let traceNamespace: string;
let lab: Lab | undefined;
let stack: Stack | undefined;
const recorder = new EventRecorder();

const clusterA = 'obs-edge-a';
const clusterB = 'obs-edge-b';
const knownTraceId = randomBytes(16).toString('hex');
const knownTraceparent = `00-${knownTraceId}-${randomBytes(8).toString('hex')}-01`;

interface Conditioned {
  status?: { conditions?: { type: string; status: string }[] };
  metadata?: { annotations?: Record<string, string> };
}
const isReady = (object: Conditioned) =>
  object.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

async function readCustom(plural: string, namespace: string, name: string): Promise<Conditioned> {
  return (await cluster.kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
    group: 'bpa.akraino.org',
    version: 'v1alpha1',
    plural,
    namespace,
    name,
  })) as Conditioned;
}

const apply = (object: KubernetesObject) =>
  applyObject(KubernetesObjectApi.makeApiClient(cluster.kubeConfig), object as never);

/** The trace id an event travelled in: its distributed-tracing extension, else the HTTP header. */
const traceOf = (recorded: RecordedEvent) => ({
  extension: traceIdOf(
    typeof recorded.event['traceparent'] === 'string' ? recorded.event['traceparent'] : undefined,
  ),
  header: traceIdOf(
    typeof recorded.headers.traceparent === 'string' ? recorded.headers.traceparent : undefined,
  ),
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bpa-observability-'));
  const namespace = cluster.namespace;
  traceNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('obs-trace'));
  lab = await startLab({ namespace, network: cluster.nodeNetwork });
  await lab.applyToCluster(cluster.kubeConfig);
  // Every KUD Job (A's and B's) runs in the functions' namespace and mounts the key there
  // (contract section 12).
  await createNamespace(cluster.kubeConfig, stackNamespace);
  await lab.applySshKeySecret(cluster.kubeConfig, stackNamespace);
  await recorder.start();
  const manifestsDir = writeStackManifests(join(dir, 'manifests'), {
    resourceNamespaces: [namespace],
    jobNamespaces: [stackNamespace],
    recorderUri: recorder.url,
  });
  stack = await startStack({
    kubeconfig: cluster.kubeconfigPath,
    port: await freeLoopbackPort(),
    manifestsDir,
    log: () => undefined,
    logFile: join(dir, 'stack.log'),
    logLevel: 'info',
    // BareMetalHosts live in A; B's Provisioning names the same lab hosts, once A is gone.
    // Software A is installed by its install Job on the node (contract section 11), whose pod
    // reaches the lab's hosts; the Job's outcome comes back as the Software's update.
    functionsEnv: {
      // The Jobs' images as the real node holds them (KUD stand-in, cleanup, publisher).
      ...cluster.functionsEnv,
      ...lab.functionsEnv,
      SWEEP_NAMESPACES: `${namespace},${traceNamespace}`,
      FUNCTIONS_NAMESPACE: stackNamespace,
      // Every posted ping sweeps (the one-sweep-per-interval rule has its own tests).
      SWEEP_INTERVAL_SECONDS: '0',
    },
  });
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  await recorder.stop();
  await lab?.stop();
  await cluster.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 180_000);

describe('a chain run through the embedded stack', () => {
  it('takes a Provisioning and its Software to Ready from the ApiServerSource events', async () => {
    const namespace = cluster.namespace;
    await apply(labSoftware(namespace, clusterA));
    await apply(labProvisioning(namespace, clusterA));
    await eventually(
      'Provisioning A Ready',
      async () => (isReady(await readCustom('provisionings', namespace, clusterA)) ? true : undefined),
      180_000,
    );
    // Not Ready: the probe throws what the Software says (conditions, hosts' errors), so a
    // timeout names the cause (a whole-suite run once timed out here with 1 of 3 hosts installed).
    await eventually(
      'Software A Ready',
      async () => {
        const software = await readCustom('softwares', namespace, `${clusterA}-tools`);
        if (isReady(software)) return true;
        throw new Error(`Software A: ${JSON.stringify(software.status ?? {})}`);
      },
      180_000,
    );
    // Ready is the install Job's own write; software-install announces it when that write's
    // update reaches it. The next test deletes A, and a Software deleted before its outcome is
    // announced is never announced (nothing left to read): the metrics below count the
    // announcement, so it is waited for here (CI once deleted A first on a loaded machine).
    const softwareA = softwareSubject(namespace, `${clusterA}-tools`);
    await eventually(
      'software.installed of Software A at the recorder',
      () =>
        recorder.received.find(
          (r) => r.event.type === EventTypes.softwareInstalled && r.event.subject === softwareA,
        ),
      60_000,
    );
  }, 300_000);

  it('keeps the source event’s trace id up to cluster.ready, across the KUD Job', async () => {
    // B names the lab's hosts, and a host serves one Provisioning at a time (its BareMetalHost's
    // spec.consumerRef, ADR 0013): A goes first, and with it its claims on the hosts. Deletion
    // counts in none of the metrics below (no step of the chain runs for it).
    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const object = (plural: string, name: string) => ({
      group: 'bpa.akraino.org',
      version: 'v1alpha1',
      plural,
      namespace: cluster.namespace,
      name,
    });
    const gone = (plural: string, name: string) =>
      custom
        .getNamespacedCustomObject(object(plural, name))
        .then(() => undefined)
        .catch((error: unknown) => ((error as { code?: number }).code === 404 ? true : undefined));
    await custom.deleteNamespacedCustomObject(object('softwares', `${clusterA}-tools`));
    await eventually('Software A gone', () => gone('softwares', `${clusterA}-tools`), 60_000);
    await custom.deleteNamespacedCustomObject(object('provisionings', clusterA));
    // The deletion advances in kud-job-launch's sweep (cleanup Job, then the finalizer): a ping
    // as the PingSource would send it, until A is gone.
    await eventually(
      'Provisioning A gone (its hosts released)',
      async () => {
        if (await gone('provisionings', clusterA)) return true;
        const ping = encodeBinary(
          makePingEvent(
            {
              apiVersion: 'sources.knative.dev/v1',
              kind: 'PingSource',
              metadata: { name: 'bpa-sweep' },
              spec: { contentType: 'application/json', data: '{"sweep":true}' },
            } as never,
            stackNamespace,
          ),
        );
        await fetch(stack!.ingressUrl, { method: 'POST', headers: ping.headers, body: ping.body });
        return undefined;
      },
      240_000,
      2000,
    );
    await apply(labProvisioning(traceNamespace, clusterB));
    const stored = (await cluster.kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: 'bpa.akraino.org',
      version: 'v1alpha1',
      plural: 'provisionings',
      namespace: traceNamespace,
      name: clusterB,
    })) as KubernetesObject;
    // What Knative's ApiServerSource adapter sends, with a trace the test knows.
    const message = encodeBinary(makeApiServerEvent(stack!.api.server, 'Resource', 'add', stored as never));
    const posted = await fetch(stack!.ingressUrl, {
      method: 'POST',
      headers: { ...message.headers, traceparent: knownTraceparent },
      body: message.body,
    });
    expect(posted.status).toBe(202);

    const subject = `namespaces/${traceNamespace}/provisionings/${clusterB}`;
    const ready = await eventually(
      'cluster.ready of B at the recorder',
      () =>
        recorder.received.find(
          (r) => r.event.type === EventTypes.clusterReady && r.event.subject === subject,
        ),
      180_000,
    );
    // cluster.ready answers the Job's update: the broker sends a reply on in the trace of that
    // delivery (as Knative does), so only its extension, which kud-job-launch set from the
    // traceparent recorded on the Job, is B's trace (docs/knative.md "Trace context").
    expect(traceOf(ready).extension).toBe(knownTraceId);
    expect(traceOf(ready).header).not.toBe(knownTraceId);

    // Every step of B in between travelled in the same trace.
    const chainOfB = recorder.received.filter((r) => r.event.subject === subject);
    expect(new Set(chainOfB.map((r) => r.event.type))).toEqual(
      new Set([
        EventTypes.hostsResolved,
        EventTypes.inventoryRendered,
        EventTypes.kudJobLaunched,
        EventTypes.clusterReady,
      ]),
    );
    for (const step of chainOfB)
      expect([step.event.type, traceOf(step)]).toEqual([
        step.event.type,
        step.event.type === EventTypes.clusterReady
          ? { extension: knownTraceId, header: expect.not.stringMatching(knownTraceId) }
          : { extension: knownTraceId, header: knownTraceId },
      ]);
    const sourceAdd = recorder.received.find(
      (r) => r.event.type === SourceEventTypes.resourceAdd && r.event['name'] === clusterB,
    );
    expect(sourceAdd && traceOf(sourceAdd).header).toBe(knownTraceId);

    // The completion itself came as a Job update in another trace: the function continued the
    // one recorded on the Job.
    const jobName = `kud-${clusterB}`;
    const job = await cluster.kubeConfig
      .makeApiClient(BatchV1Api)
      .readNamespacedJob({ name: jobName, namespace: stackNamespace });
    expect(traceIdOf(job.metadata?.annotations?.['bpa.akraino.org/traceparent'])).toBe(knownTraceId);
    const jobUpdates = recorder.received.filter(
      (r) =>
        r.event.type === SourceEventTypes.resourceUpdate &&
        r.event['kind'] === 'Job' &&
        r.event['name'] === jobName,
    );
    expect(jobUpdates.length).toBeGreaterThan(0);
    for (const update of jobUpdates) expect(traceOf(update).header).not.toBe(knownTraceId);
  }, 600_000);
});

describe('metrics after the chain run', () => {
  const functionUrl = (name: FunctionName) => {
    const found = stack!.functions.find((f) => f.name === name);
    if (!found) throw new Error(`${name} is not running`);
    return found.url;
  };
  const scrapeFunction = (name: FunctionName) => scrape(`${functionUrl(name)}/metrics`);
  const scrapeBroker = () => scrape(`${stack!.brokerUrl.replace(/\/$/, '')}/metrics`);

  const invocations = (metrics: Exposition, fn: FunctionName, eventType: string, outcome: string) => {
    const labels = { function: fn, event_type: eventType, outcome };
    return {
      invocations: sumOf(metrics, 'faas_invocations', labels) > 0,
      latencyCount: sumOf(metrics, 'faas_execution_latency_count', labels) > 0,
    };
  };
  const both = { invocations: true, latencyCount: true };

  it('counts invocations, errors and latency by function, event type and outcome', async () => {
    // One poison event, so that the error counter has a sample too.
    const poison = encodeBinary(
      makeApiServerEvent('https://127.0.0.1:6443', 'Resource', 'add', { kind: 'Provisioning' } as never),
    );
    const rejected = await fetch(functionUrl('host-lookup'), {
      method: 'POST',
      headers: { ...poison.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ not: 'a Kubernetes object' }),
    });
    expect(rejected.status).toBe(400);

    const hostLookup = await scrapeFunction('host-lookup');
    expect(invocations(hostLookup, 'host-lookup', SourceEventTypes.resourceAdd, 'reply')).toEqual(both);
    expect(invocations(hostLookup, 'host-lookup', SourceEventTypes.resourceUpdate, 'ok')).toEqual(both);
    expect(
      sumOf(hostLookup, 'faas_errors', {
        function: 'host-lookup',
        event_type: SourceEventTypes.resourceAdd,
        outcome: 'invalid',
      }),
    ).toBe(1);
    expect(sumOf(hostLookup, 'faas_cold_start_latency_count', { function: 'host-lookup' })).toBe(1);

    const render = await scrapeFunction('inventory-render');
    expect(invocations(render, 'inventory-render', EventTypes.hostsResolved, 'reply')).toEqual(both);

    const kud = await scrapeFunction('kud-job-launch');
    expect(invocations(kud, 'kud-job-launch', EventTypes.inventoryRendered, 'reply')).toEqual(both);
    expect(invocations(kud, 'kud-job-launch', SourceEventTypes.resourceUpdate, 'reply')).toEqual(both);

    const software = await scrapeFunction('software-install');
    expect(invocations(software, 'software-install', SourceEventTypes.resourceAdd, 'ok')).toEqual(both);
    // cluster.ready creates the install Job (no reply); the Software's update that the Job's
    // recorded outcome causes is answered with software.installed.
    expect(invocations(software, 'software-install', EventTypes.clusterReady, 'ok')).toEqual(both);
    expect(invocations(software, 'software-install', SourceEventTypes.resourceUpdate, 'reply')).toEqual(both);
    // No function reports another's name, and nothing failed besides the poison event.
    for (const [name, metrics] of [
      ['host-lookup', hostLookup],
      ['inventory-render', render],
      ['kud-job-launch', kud],
      ['software-install', software],
    ] as const) {
      const functionsSeen = new Set(
        metrics.samples.filter((s) => s.name === 'faas_invocations').map((s) => s.labels.function),
      );
      expect([...functionsSeen]).toEqual([name]);
      expect(sumOf(metrics, 'faas_errors')).toBe(name === 'host-lookup' ? 1 : 0);
    }
  });

  it('records the domain metrics of each step with non-zero values', async () => {
    const hostLookup = await scrapeFunction('host-lookup');
    // Two Provisionings of the lab: two masters from the lease file and one worker from its NICs, each.
    expect(sumOf(hostLookup, 'bpa_nodes_resolved_total', { source: 'dhcp-leases' })).toBe(4);
    expect(sumOf(hostLookup, 'bpa_nodes_resolved_total', { source: 'host-nics' })).toBe(2);

    const render = await scrapeFunction('inventory-render');
    expect(sumOf(render, 'bpa_inventories_rendered_total')).toBe(2);

    const kud = await scrapeFunction('kud-job-launch');
    expect(sumOf(kud, 'bpa_jobs_launched_total', { outcome: 'created' })).toBe(2);
    expect(sumOf(kud, 'bpa_jobs_finished_total', { outcome: 'succeeded' })).toBe(2);
    expect(sumOf(kud, 'bpa_jobs_finished_total', { outcome: 'failed' })).toBe(0);
    expect(sumOf(kud, 'bpa_kud_run_duration_seconds_count', { outcome: 'succeeded' })).toBe(2);
    expect(sumOf(kud, 'bpa_kud_run_duration_seconds_sum', { outcome: 'succeeded' })).toBeGreaterThanOrEqual(
      0,
    );
    expect(sumOf(kud, 'bpa_time_to_ready_seconds_count')).toBe(2);
    expect(sumOf(kud, 'bpa_time_to_ready_seconds_sum')).toBeGreaterThan(0);

    const software = await scrapeFunction('software-install');
    // Software A: three hosts, each installed once by the install Job, recorded by
    // software-install when it announced the Job's outcome.
    expect(sumOf(software, 'bpa_software_host_installs_total', { outcome: 'succeeded' })).toBe(3);
    expect(sumOf(software, 'bpa_software_host_installs_total', { outcome: 'failed' })).toBe(0);
    expect(sumOf(software, 'bpa_ssh_connect_duration_seconds_count', { outcome: 'connected' })).toBe(3);
    expect(sumOf(software, 'bpa_ssh_command_duration_seconds_count', { outcome: 'succeeded' })).toBe(3);
  });

  it('has the broker report dispatches by trigger, event type and response code', async () => {
    const broker = await scrapeBroker();
    const dispatched = (trigger: string, type: string, code: string) =>
      sumOf(broker, 'kn_eventing_dispatch_duration_seconds_count', {
        kn_broker_namespace: 'bpa-system',
        kn_broker_name: 'default',
        messaging_destination_name: `trigger:${trigger}.bpa-system`,
        cloudevents_type: type,
        http_response_status_code: code,
      });
    // Each of the two adds is answered with a reply once. Delivery is at least once: on a loaded
    // machine an attempt whose answer was lost is retried, and the retry finds the step done (204).
    const addReplies = dispatched('host-lookup-provisioning-add', SourceEventTypes.resourceAdd, '200');
    const addRetriesDone = dispatched('host-lookup-provisioning-add', SourceEventTypes.resourceAdd, '204');
    expect(addReplies).toBeGreaterThanOrEqual(1);
    expect(addReplies + addRetriesDone).toBeGreaterThanOrEqual(2);
    expect(
      dispatched('host-lookup-provisioning-update', SourceEventTypes.resourceUpdate, '204'),
    ).toBeGreaterThan(0);
    expect(dispatched('inventory-render-hosts-resolved', EventTypes.hostsResolved, '200')).toBe(2);
    expect(dispatched('kud-job-launch-inventory-rendered', EventTypes.inventoryRendered, '200')).toBe(2);
    expect(dispatched('kud-job-launch-job-update', SourceEventTypes.resourceUpdate, '200')).toBe(2);
    // A's cluster.ready creates the install Job, B's finds no Software: no reply to either. The
    // Job's outcome is announced once, in answer to the Software's update.
    expect(dispatched('software-install-cluster-ready', EventTypes.clusterReady, '200')).toBe(0);
    expect(dispatched('software-install-cluster-ready', EventTypes.clusterReady, '204')).toBe(2);
    expect(dispatched('software-install-software-update', SourceEventTypes.resourceUpdate, '200')).toBe(1);
    expect(dispatched('observability-recorder', EventTypes.clusterReady, '202')).toBe(2);
    // Every dispatch also has its latency buckets, up to +Inf.
    const infBuckets = sumOf(broker, 'kn_eventing_dispatch_duration_seconds_bucket', { le: '+Inf' });
    expect(infBuckets).toBe(sumOf(broker, 'kn_eventing_dispatch_duration_seconds_count'));
    expect(
      sumOf(broker, 'kn_eventing_broker_ingress_events_total', {
        kn_broker_name: 'default',
        cloudevents_type: EventTypes.clusterReady,
        http_response_status_code: '202',
      }),
    ).toBe(2);
  });

  it('exports every metric the Grafana dashboard queries and metrics.json lists, with the labels they use', async () => {
    const exported = merge([...(await Promise.all(functionNames.map(scrapeFunction))), await scrapeBroker()]);
    const observability = join(repoRoot(), 'manifests', 'observability');
    const dashboard = JSON.parse(readFileSync(join(observability, 'dashboard.json'), 'utf8')) as {
      panels: Panel[];
      templating: { list: { name: string; query?: unknown }[] };
    };
    interface Panel {
      targets?: { expr: string }[];
      panels?: Panel[];
    }
    const flatten = (list: Panel[]): Panel[] => list.flatMap((p) => [p, ...flatten(p.panels ?? [])]);
    const expressions = flatten(dashboard.panels).flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    const variable = JSON.stringify(
      dashboard.templating.list.find((v) => v.name === 'function')?.query ?? '',
    );
    const [, variableMetric = '', variableLabel = ''] = /label_values\((\w+),\s*(\w+)\)/.exec(variable) ?? [];
    const uses = [...expressions.flatMap(seriesUses), { series: variableMetric, labels: [variableLabel] }];
    expect(uses.length).toBeGreaterThan(expressions.length - 1);

    const problems: string[] = [];
    for (const use of uses) {
      const metric = metricOfSeries(exported, use.series);
      if (!metric) {
        problems.push(`${use.series}: not exported`);
        continue;
      }
      // Label names as the running process writes them on that series.
      const samples = exported.samples.filter((s) => s.name === use.series);
      if (samples.length === 0) problems.push(`${use.series}: exported but no sample after the chain run`);
      const seen = new Set(samples.flatMap((s) => Object.keys(s.labels)));
      for (const label of use.labels) if (!seen.has(label)) problems.push(`${use.series}: no label ${label}`);
    }

    const listed = JSON.parse(readFileSync(join(observability, 'metrics.json'), 'utf8')) as {
      metrics: { name: string; type: string; labels: string[] }[];
    };
    for (const metric of listed.metrics) {
      const type = exported.types.get(metric.name);
      if (type !== metric.type)
        problems.push(
          `metrics.json ${metric.name}: exported as ${type ?? 'nothing'}, listed as ${metric.type}`,
        );
      const series = metric.type === 'histogram' ? `${metric.name}_count` : metric.name;
      const seen = new Set(
        exported.samples.filter((s) => s.name === series).flatMap((s) => Object.keys(s.labels)),
      );
      for (const label of metric.labels)
        if (!seen.has(label)) problems.push(`metrics.json ${metric.name}: no label ${label} on ${series}`);
    }
    expect(problems).toEqual([]);
  });
});

describe('logs', () => {
  interface LogLine {
    component?: string;
    msg: string;
    ce_id?: string;
    ce_type?: string;
    trace_id?: string;
    namespace?: string;
    name?: string;
    reply_type?: string;
    cluster?: string;
  }

  it('puts the trace id on every log line of a request, the continued one after the Job', async () => {
    await stack!.stop(); // flushes the log file
    const lines = readFileSync(join(dir, 'stack.log'), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as LogLine);
    const requestLines = lines.filter(
      (line) => functionNames.includes(line.component as FunctionName) && line.ce_id !== undefined,
    );
    expect(requestLines.length).toBeGreaterThan(20);
    const withoutTrace = requestLines.filter((line) => !/^[0-9a-f]{32}$/.test(line.trace_id ?? ''));
    expect(withoutTrace).toEqual([]);

    // The request that finished B: an update of B's KUD Job (in the functions' namespace)
    // answered with cluster.ready, logged in B's trace.
    const finished = requestLines.filter(
      (line) =>
        line.component === 'kud-job-launch' &&
        line.msg === 'event' &&
        line.ce_type === SourceEventTypes.resourceUpdate &&
        line.namespace === stackNamespace &&
        line.name === `kud-${clusterB}` &&
        line.reply_type === EventTypes.clusterReady,
    );
    expect(finished.map((line) => line.trace_id)).toEqual([knownTraceId]);
    const readyLine = requestLines.find((line) => line.msg === 'cluster ready' && line.cluster === clusterB);
    expect(readyLine?.trace_id).toBe(knownTraceId);
    expect(readyLine?.ce_id).toBe(finished[0]?.ce_id);
    // Every line of B's chain requests is in the known trace, from host-lookup on.
    const chainIds = new Set(
      requestLines.filter((line) => line.trace_id === knownTraceId).map((line) => line.component),
    );
    expect([...chainIds].sort()).toEqual([
      'host-lookup',
      'inventory-render',
      'kud-job-launch',
      'software-install',
    ]);
  });
});

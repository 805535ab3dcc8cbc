/**
 * A delivery retried while the first attempt still runs, and the broker's /metrics, on real
 * Knative Eventing (issue 25 items 5 and 6; test/support/chain-engine.ts, `knative` only: the
 * embedded broker's timeouts and metrics are ours, and proving them is differential.test.ts's).
 *
 * 1. Slow first deliveries: an admission webhook (test/support/slow-admission.ts) holds the first
 *    create of every Job in the tenant's and the functions' namespace 15 s, and the Triggers of
 *    kud-job-launch and software-install get `delivery.timeout: PT4S`. So the delivery that
 *    creates the KUD Job and the one that creates the install Job outlive their Trigger's timeout
 *    while the function still runs, and the broker sends the same CloudEvent again (what a cold
 *    start behind Serving's activator does to a delivery, docs/deploy.md). The API server then
 *    holds exactly one KUD Job and one install Job, the Software's status names that one Job, and
 *    it has one InstallJobCreated Event; the functions' logs show the same event id handled twice.
 *    kud-job-launch's retry waits in the per-object queue (shared/server/object-queue.ts) until
 *    the first attempt ends, then finds JobLaunched recorded and tries no create; software-install's
 *    retry waits in its own queue the same way, then finds the Software claimed (its install Job
 *    pending) and steps back.
 * 2. The broker's /metrics: with Eventing's config-observability `metrics-protocol: prometheus`,
 *    broker-filter and broker-ingress serve them on their pods' port 9092; every series and label
 *    that the Grafana dashboard's broker panels (manifests/observability/dashboard.json, the
 *    panels on `kn_*` metrics) use is there, with a sample of a Trigger of ours.
 *
 * Real: kube-apiserver and its admission webhook client, etcd, the Job controller, the node (a
 * real kubelet and containerd, local/kubelet-node) running every pod from its image, Knative
 * Eventing v0.49.2 (MT broker, in-memory channel, ApiServerSources) and its Prometheus exporter.
 * IMITATION: the Knative Services as Deployments (the local Serving overlay); the KUD installer
 * (bpa.local/test/kud-waits:1, released by the
 * test) and the install Job's container (a shell that sleeps: no host is reached, the test is
 * about how many Jobs exist, not what they do); the hosts are BareMetalHosts with inspected NICs.
 * The slowness is a real one (a webhook in the API server's path), its length the test's choice.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BatchV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { repoRoot } from '../../../local/control-plane/repo-root.js';
import { waitFor } from '../../../local/control-plane/wait.js';
import { knativeNamespace } from '../../../local/knative/install.js';
import { stackNamespace } from '../../../local/stack/index.js';
import { kudJobName } from '../../../shared/core/names.js';
import { EventTypes } from '../../../shared/events/types.js';
import { waitedLine } from '../../../shared/k8s/define-step.js';
import {
  noEngineReason,
  useChainEngine,
  type ChainEngine,
  type FunctionLogLine,
} from '../../support/chain-engine.js';
import { createKudSshKeySecret, kudTestImage } from '../../support/node.js';
import { startSlowAdmission, type SlowAdmission } from '../../support/slow-admission.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  provisioningObject,
} from '../functions/support/fixtures.js';
import { merge, metricOfSeries, scrape, type Exposition } from '../observability/support/prometheus-text.js';
import { seriesUses } from '../observability/support/promql-series.js';

const cluster = 'slow';
const mac = 'ab:cd:00:00:00:01';
const softwareName = `${cluster}-tools`;
/** How long the webhook holds a Job's first create: well past the Triggers' 4 s. */
const holdMs = 15_000;
const shortTimeout = 'PT4S';
/** The Triggers whose deliveries create Jobs, and their siblings (a sweep or update may come first). */
const slowTriggers = [
  'kud-job-launch-inventory-rendered',
  'kud-job-launch-job-update',
  'kud-job-launch-sweep',
  'software-install-software-add',
  'software-install-software-update',
  'software-install-cluster-ready',
  'software-install-sweep',
];

const reason = noEngineReason('knative');
if (reason)
  process.stderr.write(`[chain] skipping "a delivery retried while the first still runs": ${reason}\n`);
// Skipped only where real Knative cannot run (no root, or BPA_TEST_KNATIVE=0): the reason is
// printed above; CI runs as root with Knative, so there it always runs.
const describeKnative = reason ? describe.skip : describe;

describeKnative('a delivery retried while the first still runs [knative]', () => {
  let admission: SlowAdmission | undefined;
  const chain: ChainEngine = useChainEngine('knative', {
    namespacePrefix: 'chain-retry',
    knativeObservability: { 'metrics-protocol': 'prometheus' },
    prepare: async ({ kubeConfig, namespace, functionsNamespace }) => {
      await createKudSshKeySecret(kubeConfig, functionsNamespace);
      await createKudSshKeySecret(kubeConfig, namespace);
      await createBareMetalHost(kubeConfig, {
        name: `${cluster}-host`,
        namespace,
        bootMac: mac,
        nics: [{ name: 'eth0', mac, ip: '10.31.0.1' }],
      });
      admission = await startSlowAdmission(kubeConfig, {
        name: `slow-jobs-${namespace}`,
        namespaces: [namespace, functionsNamespace],
        holdMs,
      });
    },
    config: ({ namespace }) => ({
      BMH_NAMESPACE: namespace,
      KUD_IMAGE: kudTestImage.waits,
      // No sweep: only the chain's events (and their retries) drive this suite.
      SWEEP_NAMESPACES: 'no-sweep-here',
      // The install Job's pod sleeps: it stays Running, so nothing re-runs the install.
      INSTALL_JOB_IMAGE: 'bpa.local/test/shell:1',
      INSTALL_JOB_COMMAND: '/bin/sh,-c,sleep 3600',
    }),
  });

  beforeAll(async () => {
    for (const trigger of slowTriggers)
      await chain.kubectl([
        'patch',
        'trigger',
        trigger,
        '-n',
        stackNamespace,
        '--type',
        'merge',
        '-p',
        JSON.stringify({ spec: { delivery: { timeout: shortTimeout } } }),
      ]);
    // Ready for the patched generation: the broker's filter reads the Trigger from its informer.
    await waitFor(
      async () => {
        const list = JSON.parse(
          await chain.kubectl(['get', 'triggers', '-n', stackNamespace, '-o', 'json']),
        ) as {
          items: {
            metadata: { name: string; generation: number };
            spec: { delivery?: { timeout?: string } };
            status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
          }[];
        };
        const patched = list.items.filter((t) => slowTriggers.includes(t.metadata.name));
        return patched.length === slowTriggers.length &&
          patched.every(
            (t) =>
              t.spec.delivery?.timeout === shortTimeout &&
              t.status?.observedGeneration === t.metadata.generation &&
              t.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          )
          ? true
          : undefined;
      },
      { what: 'the patched Triggers Ready', timeoutMs: 120_000, intervalMs: 1000 },
    );
  }, 180_000);

  afterAll(async () => {
    await admission?.stop();
  });

  const core = () => chain.kubeConfig.makeApiClient(CoreV1Api);
  const batch = () => chain.kubeConfig.makeApiClient(BatchV1Api);
  /** Ids of the events `name` handled more than once ('event' is logged when a request ends). */
  const handledTwice = (lines: FunctionLogLine[], type?: string) => {
    const counts = new Map<string, number>();
    for (const line of lines)
      if (line.msg === 'event' && line.ce_id && (type === undefined || line.ce_type === type))
        counts.set(line.ce_id, (counts.get(line.ce_id) ?? 0) + 1);
    return new Set([...counts].filter(([, n]) => n > 1).map(([id]) => id));
  };
  const creates = (namespace: string, name: string) =>
    (admission?.admitted ?? []).filter((a) => a.namespace === namespace && a.name === name && !a.dryRun);

  it('the KUD Job: a retried inventory.rendered creates no second Job', async () => {
    const { namespace, functionsNamespace } = chain;
    await chain.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify(
        provisioningObject({ name: cluster, namespace, cluster, masters: [{ label: 'm', mac }] }),
      ),
    );
    const launched = await chain.waitForCondition(cluster, 'JobLaunched', 'True', 240_000);
    const jobName = kudJobName(cluster);
    expect(launched.status?.jobName).toBe(jobName);
    // The broker sent the same inventory.rendered again while the first attempt was held. The
    // retry waited for it in kud-job-launch's per-object queue, then found JobLaunched recorded.
    const log = await waitFor(
      async () => {
        const lines = await chain.functionLog('kud-job-launch');
        return handledTwice(lines, EventTypes.inventoryRendered).size >= 1 ? lines : undefined;
      },
      { what: 'inventory.rendered handled twice by kud-job-launch', timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(log.filter((l) => l.msg === waitedLine).length).toBeGreaterThanOrEqual(1);
    // One create reached the API server, the held one: the retry never tried.
    const kudCreates = creates(functionsNamespace, jobName);
    expect(kudCreates.map((c) => c.held)).toEqual([true]);
    expect(kudCreates.map((c) => c.user)).toEqual([`system:serviceaccount:${stackNamespace}:kud-job-launch`]);
    expect(log.filter((l) => l.msg === 'KUD Job launch').map((l) => l['launch'])).toEqual(['created']);
    expect((await chain.jobsOf(cluster)).map((j) => j.metadata?.name)).toEqual([jobName]);

    await chain.releaseKudJob(cluster, 0);
    await chain.waitForCondition(cluster, 'Ready', 'True', 180_000);
    expect((await chain.jobsOf(cluster)).map((j) => j.metadata?.name)).toEqual([jobName]);
  }, 600_000);

  it('the install Job: a retried delivery to software-install creates no second Job', async () => {
    const { namespace } = chain;
    await chain.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: `${bpaGroup.group}/${bpaGroup.version}`,
        kind: 'Software',
        metadata: { name: softwareName, namespace, labels: { cluster } },
        spec: { masterSoftware: ['curl'], workerSoftware: [] },
      }),
    );
    interface StoredSoftware {
      status?: { installJob?: string; conditions?: { type: string; status: string; reason?: string }[] };
    }
    const readSoftware = async () =>
      (await chain.kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
        ...bpaGroup,
        plural: 'softwares',
        namespace,
        name: softwareName,
      })) as StoredSoftware;
    const installing = await waitFor(
      async () => {
        const software = await readSoftware();
        return software.status?.installJob ? software : undefined;
      },
      { what: `status.installJob of Software ${softwareName}`, timeoutMs: 240_000, intervalMs: 1000 },
    );
    const jobName = installing.status?.installJob ?? '';
    expect(conditionOf(installing as never, 'Installed')).toMatchObject({
      status: 'Unknown',
      reason: 'Installing',
    });

    // software-install logs the created Job when its request ends: the held one's.
    const log = await waitFor(
      async () => {
        const lines = await chain.functionLog('software-install');
        return lines.some((l) => l.msg === 'install job created') ? lines : undefined;
      },
      { what: 'software-install’s install job created line', timeoutMs: 60_000, intervalMs: 1000 },
    );
    // One create of the install Job reached the API server, the held one: the retry waited in
    // the queue, found the Software claimed and never tried (a second try would be a second run).
    expect(creates(namespace, jobName).map((c) => c.held)).toEqual([true]);
    const created = log.filter((l) => l.msg === 'install job created');
    expect(created.map((l) => l['job'])).toEqual([jobName]);
    // The delivery that created it was sent again while it ran: its event id ended twice (the
    // first created the Job once admitted, the retry then stepped back at the claim).
    const createdBy = created[0]?.ce_id ?? '';
    expect(createdBy).not.toBe('');
    const twice = await waitFor(
      async () => {
        const ids = handledTwice(await chain.functionLog('software-install'));
        return ids.has(createdBy) ? ids : undefined;
      },
      { what: `event ${createdBy} handled twice by software-install`, timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(twice.has(createdBy)).toBe(true);

    const jobs = (
      await batch().listNamespacedJob({
        namespace,
        labelSelector: 'app.kubernetes.io/managed-by=bpa-functions',
      })
    ).items;
    expect(jobs.map((j) => j.metadata?.name)).toEqual([jobName]);
    const events = (
      await core().listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.kind=Software,involvedObject.name=${softwareName}`,
      })
    ).items.filter((e) => e.reason === 'InstallJobCreated');
    expect(events.map((e) => [e.count ?? 1, e.message])).toEqual([
      [1, `Installing on 1 host in Job ${jobName}`],
    ]);
    // Still the one run, installing in that Job (no failure of a look-alike, no second claim).
    const now = await readSoftware();
    expect(now.status?.installJob).toBe(jobName);
    expect(conditionOf(now as never, 'Installed')).toMatchObject({ status: 'Unknown', reason: 'Installing' });
  }, 600_000);

  describe("the broker's /metrics", () => {
    interface Panel {
      title: string;
      targets?: { expr: string }[];
      panels?: Panel[];
    }
    const flatten = (list: Panel[]): Panel[] => list.flatMap((p) => [p, ...flatten(p.panels ?? [])]);
    const dashboard = JSON.parse(
      readFileSync(join(repoRoot(), 'manifests', 'observability', 'dashboard.json'), 'utf8'),
    ) as { panels: Panel[] };
    /** The dashboard's expressions on Knative's metrics (`kn_*`): the broker panels. */
    const brokerExpressions = flatten(dashboard.panels)
      .flatMap((p) => (p.targets ?? []).map((t) => t.expr))
      .filter((expr) => seriesUses(expr).some((use) => use.series.startsWith('kn_')));

    /**
     * broker-filter's and broker-ingress' /metrics, from their pods' port 9092: their main sets
     * that as the Prometheus port (cmd/broker/{filter,ingress}, defaultMetricsPort; their
     * Services' `http-metrics`), not knative.dev/pkg's default 9090 of the other components.
     */
    const scrapeBroker = async (): Promise<{ filter: Exposition; ingress: Exposition }> => {
      const pods = (await core().listNamespacedPod({ namespace: knativeNamespace })).items;
      const ipOf = (prefix: string) => {
        const pod = pods.find(
          (p) => p.metadata?.name?.startsWith(prefix) === true && p.status?.phase === 'Running',
        );
        if (!pod?.status?.podIP) throw new Error(`no running ${prefix} pod in ${knativeNamespace}`);
        return pod.status.podIP;
      };
      return {
        filter: await scrape(`http://${ipOf('mt-broker-filter-')}:9092/metrics`),
        ingress: await scrape(`http://${ipOf('mt-broker-ingress-')}:9092/metrics`),
      };
    };

    it('the dashboard queries something of the broker', () => {
      expect(brokerExpressions.length).toBeGreaterThan(0);
    });

    it('serve every series and label the dashboard’s broker panels use, for our Triggers', async () => {
      const { filter, ingress } = await scrapeBroker();
      const exported = merge([filter, ingress]);
      const problems: string[] = [];
      for (const use of brokerExpressions.flatMap(seriesUses)) {
        if (!metricOfSeries(exported, use.series)) {
          problems.push(`${use.series}: not exported`);
          continue;
        }
        const samples = exported.samples.filter((s) => s.name === use.series);
        if (samples.length === 0) problems.push(`${use.series}: exported but no sample`);
        const seen = new Set(samples.flatMap((s) => Object.keys(s.labels)));
        for (const label of use.labels)
          if (!seen.has(label)) problems.push(`${use.series}: no label ${label}`);
      }
      // Each selector of the broker panels selects samples of the real filter: its = and =~
      // matchers hold on at least one series (a query can name existing labels and match nothing).
      for (const expr of brokerExpressions)
        for (const [, series = '', block = ''] of expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}/g)) {
          const matchers = [...block.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)];
          const selected = filter.samples.filter(
            (sample) =>
              sample.name === series &&
              matchers.every(([, label = '', op, value = '']) => {
                const actual = sample.labels[label] ?? '';
                if (op === '=') return actual === value;
                if (op === '!=') return actual !== value;
                const matches = new RegExp(`^(?:${value})$`).test(actual);
                return op === '=~' ? matches : !matches;
              }),
          );
          if (selected.length === 0) problems.push(`${series}{${block}}: selects no sample of broker-filter`);
        }
      // What the real broker serves, for the record (docs/observability.md quotes it).
      const shape = (exposition: Exposition) =>
        [
          ...new Set(
            exposition.samples
              .filter((s) => s.name.startsWith('kn_'))
              .map((s) => `${s.name}{${Object.keys(s.labels).sort().join(',')}}`),
          ),
        ].join('\n  ');
      process.stderr.write(
        `[retried-delivery] broker-filter:\n  ${shape(filter)}\n[retried-delivery] broker-ingress:\n  ${shape(ingress)}\n`,
      );
      expect(problems).toEqual([]);
      // The filter's dispatches name our Triggers, among them the patched ones' timed-out attempts.
      const destinations = new Set(
        filter.samples
          .filter((s) => s.name === 'kn_eventing_dispatch_duration_seconds_count')
          .map((s) => s.labels['messaging_destination_name']),
      );
      // The ingress records the same histogram for its own dispatch (to the broker's channel):
      // not a Trigger's, which is why the panels select `trigger:` destinations.
      const ingressDestinations = new Set(
        ingress.samples
          .filter((s) => s.name === 'kn_eventing_dispatch_duration_seconds_count')
          .map((s) => s.labels['messaging_destination_name'] ?? ''),
      );
      process.stderr.write(
        `[retried-delivery] ingress destinations: ${[...ingressDestinations].join(', ')}\n`,
      );
      expect(ingressDestinations.size).toBeGreaterThan(0);
      expect([...ingressDestinations].filter((d) => d.startsWith('trigger:'))).toEqual([]);
      expect([...destinations]).toEqual(
        expect.arrayContaining([`trigger:kud-job-launch-inventory-rendered.${stackNamespace}`]),
      );
    }, 60_000);
  });
});

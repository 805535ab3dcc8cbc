/**
 * The chain with the Broker closed to all but the manifests' senders (issue 23 item 6): real
 * Knative Eventing with `authentication-oidc: enabled` and manifests/components/event-authorization,
 * on a cluster of its own whose control plane names the in-cluster jwks_uri (the ingress verifies
 * each token against the API server's keys; docs/knative.md "Event authorization").
 *
 * Shows, as users drive it: a Provisioning goes to Ready through the sources' events (the
 * ApiServerSources' OIDC identities), the functions' replies (each Trigger's identity, from the
 * broker filter) and the functions' own sends (host-lookup's sweep finds a host that appeared late
 * and sends hosts.resolved with the token Knative mounts under its SinkBinding, SINK_TOKEN_FILE);
 * `bpa send --token-file` with a token of bpa-sender passes; no token gets 401, and a valid token
 * of a tenant's ServiceAccount or of a function's own ServiceAccount gets 403, changing nothing.
 *
 * Real: kube-apiserver (TokenRequest, the issuer's keys), Kubernetes' controllers, the node (a
 * real kubelet and containerd, local/kubelet-node: projected tokens mounted by the kubelet),
 * Knative Eventing (controller, webhook, MT broker ingress and filter, ApiServerSource adapters,
 * mtping) and the functions as pods, all from their images. IMITATION: the Knative Services run
 * as Deployments (the local Serving overlay: no Serving here); the KUD installer is the test image
 * bpa.local/test/kud-waits:1; the hosts are BareMetalHosts with inspected NICs (no hardware).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { z } from 'zod';
import { main } from '../../../cli/main.js';
import { waitFor } from '../../../local/control-plane/wait.js';
import { useChainEngine } from '../../support/chain-engine.js';
import { describeOnKnative } from '../../support/knative.js';
import { triggerOidcServiceAccount } from '../../support/knative-oidc.js';
import { createKudSshKeySecret, kudTestImage } from '../../support/node.js';
import { conditionOf, createBareMetalHost, provisioningObject } from '../functions/support/fixtures.js';

const lateHost = { name: 'late-host', mac: 'ae:ae:00:00:00:01', ip: '10.40.0.1' };

const brokerStatusSchema = z.looseObject({
  status: z.looseObject({
    address: z.looseObject({ audience: z.string() }),
    policies: z.array(z.looseObject({ name: z.string() })).optional(),
  }),
});

describeOnKnative('the chain behind an EventPolicy, OIDC on (components/event-authorization)', () => {
  const chain = useChainEngine('knative', {
    namespacePrefix: 'chain-authz',
    eventAuthorization: true,
    prepare: async ({ kubeConfig, namespace, functionsNamespace }) => {
      await createKudSshKeySecret(kubeConfig, functionsNamespace);
      await kubeConfig
        .makeApiClient(CoreV1Api)
        .createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'tenant' } } });
    },
    config: ({ namespace }) => ({
      BMH_NAMESPACE: namespace,
      KUD_IMAGE: kudTestImage.waits,
      SWEEP_NAMESPACES: namespace,
    }),
  });
  const core = () => chain.kubeConfig.makeApiClient(CoreV1Api);
  let audience = '';
  let workDir = '';

  beforeAll(async () => {
    const broker = brokerStatusSchema.parse(
      await chain.kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
        group: 'eventing.knative.dev',
        version: 'v1',
        plural: 'brokers',
        namespace: chain.functionsNamespace,
        name: 'default',
      }),
    );
    audience = broker.status.address.audience;
    expect(broker.status.policies?.map((p) => p.name)).toEqual(['bpa-functions']);
    workDir = await mkdtemp(join(tmpdir(), 'chain-authz-'));
  });

  /** Watches this suite opened (stopped at the end, also when a test fails midway). */
  const watches: AbortController[] = [];
  afterAll(async () => {
    for (const watch of watches) watch.abort();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  /** A token of `serviceAccount` for the Broker's audience, in a file (what `bpa send --token-file` reads). */
  const tokenFileOf = async (serviceAccount: string, namespace: string) => {
    const response = await core().createNamespacedServiceAccountToken({
      name: serviceAccount,
      namespace,
      body: { spec: { audiences: [audience], expirationSeconds: 600 } },
    });
    const file = join(workDir, `${namespace}-${serviceAccount}.token`);
    await writeFile(file, response.status?.token ?? '');
    return file;
  };

  /** `bpa send` to the Broker's ingress: its exit code and output. */
  const bpaSend = async (id: string, extra: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await main(
      [
        'send',
        '--to',
        chain.ingressUrl,
        // The sweep's ping: every function has a Trigger for it, so an accepted one is seen.
        '--type',
        'dev.knative.sources.ping',
        '--id',
        id,
        '--data',
        '{}',
        ...extra,
      ],
      { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) },
    );
    return { code, stdout, stderr };
  };

  it("names each Trigger's real OIDC identity (status.auth) as a subject of the shipped policy", async () => {
    const objects = chain.kubeConfig.makeApiClient(CustomObjectsApi);
    const triggers = z
      .object({
        items: z.array(
          z.looseObject({
            metadata: z.looseObject({ name: z.string() }),
            status: z.looseObject({ auth: z.object({ serviceAccountName: z.string() }) }),
          }),
        ),
      })
      .parse(
        await objects.listNamespacedCustomObject({
          group: 'eventing.knative.dev',
          version: 'v1',
          plural: 'triggers',
          namespace: chain.functionsNamespace,
        }),
      );
    const policy = z.looseObject({ status: z.looseObject({ from: z.array(z.string()) }) }).parse(
      await objects.getNamespacedCustomObject({
        group: 'eventing.knative.dev',
        version: 'v1alpha1',
        plural: 'eventpolicies',
        namespace: chain.functionsNamespace,
        name: 'bpa-functions',
      }),
    );
    expect(triggers.items).toHaveLength(11);
    for (const trigger of triggers.items) {
      expect(trigger.status.auth.serviceAccountName).toBe(triggerOidcServiceAccount(trigger.metadata.name));
      expect(policy.status.from).toContain(
        `system:serviceaccount:${chain.functionsNamespace}:${trigger.status.auth.serviceAccountName}`,
      );
    }
  });

  it("goes to Ready through the sources, the Triggers' replies and the sweep's own send of a host found late", async () => {
    const { namespace, kubeConfig } = chain;
    // Every version of `late` is one ApiServerSource event for host-lookup (add, then updates).
    const versions = new Set<string>();
    const watch = await new Watch(kubeConfig).watch(
      `/apis/bpa.akraino.org/v1alpha1/namespaces/${namespace}/provisionings`,
      { fieldSelector: 'metadata.name=late' },
      (_phase, object: { metadata?: { resourceVersion?: string } }) => {
        if (object.metadata?.resourceVersion) versions.add(object.metadata.resourceVersion);
      },
      () => undefined,
    );
    watches.push(watch);
    await chain.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify(
        provisioningObject({
          name: 'late',
          namespace,
          cluster: 'late',
          masters: [{ label: 'late-1', mac: lateHost.mac }],
        }),
      ),
    );
    // The ApiServerSource's event passed the policy: host-lookup looked, and found nothing.
    const missing = await chain.waitForCondition('late', 'HostsResolved', 'False', 180_000);
    expect(conditionOf(missing, 'HostsResolved')).toMatchObject({ reason: 'HostNotFound' });
    // The add and the echoes of the first status writes are handled concurrently, and each one
    // that read `late` before HostNotFound was written looks the hosts up itself: a host created
    // while one of them is still looking is found by it, not by the sweep. So the host comes only
    // once host-lookup has answered an event for each version of `late` so far.
    await waitFor(
      async () => {
        const answered = (await chain.functionLog('host-lookup')).filter(
          (line) => line.msg === 'event' && line.name === 'late',
        ).length;
        return answered >= versions.size ? true : undefined;
      },
      {
        what: "host-lookup to answer every event of late's versions so far",
        timeoutMs: 60_000,
        intervalMs: 500,
      },
    );
    watch.abort();

    await createBareMetalHost(kubeConfig, {
      name: lateHost.name,
      namespace,
      bootMac: lateHost.mac,
      nics: [{ name: 'eth0', mac: lateHost.mac, ip: lateHost.ip }],
    });
    // Only the sweep (a ping a minute) looks again now. It resolves the hosts and sends hosts.resolved
    // itself, with its SinkBinding's token; inventory-render and kud-job-launch follow on replies.
    const launched = await chain.waitForCondition('late', 'JobLaunched', 'True', 240_000);
    expect(launched.status?.nodes?.map((n) => [n.label, n.ip])).toEqual([['late-1', lateHost.ip]]);
    const hostLookupLog = await chain.functionLog('host-lookup');
    const sweeps = hostLookupLog.filter((line) => line.msg === 'sweep done' && Number(line['sent'] ?? 0) > 0);
    // When this fails, the lines that say how the hosts were resolved instead (an event about
    // `late`, a sweep, a warning) are the message.
    const howResolved = hostLookupLog
      .filter((line) => line.name === 'late' || line.msg.startsWith('sweep') || line['level'] !== 'info')
      .map((line) => JSON.stringify(line));
    if (sweeps.length === 0)
      throw new Error(
        `no sweep of host-lookup sent an event; its lines about late, sweeps and warnings:\n${howResolved.join('\n')}`,
      );
    expect(sweeps.every((line) => line['failed'] === 0)).toBe(true);

    // The Job's end comes through the bpa-jobs source; Ready and cluster.ready follow.
    await chain.releaseKudJob('late', 0);
    const ready = await chain.waitForCondition('late', 'Ready', 'True', 180_000);
    expect(conditionOf(ready, 'KudInstalled')).toMatchObject({ status: 'True' });
  }, 600_000);

  /** The functions' log lines about events whose id starts with `prefix`. */
  const linesAbout = async (prefix: string) => {
    const lines = [];
    for (const name of ['host-lookup', 'inventory-render', 'kud-job-launch', 'software-install'] as const)
      lines.push(...(await chain.functionLog(name)).filter((l) => l.ce_id?.startsWith(prefix)));
    return lines;
  };

  it('`bpa send --token-file` with a token of bpa-sender is accepted (202) and delivered', async () => {
    const file = await tokenFileOf('bpa-sender', chain.functionsNamespace);
    const sent = await bpaSend('authz-sender-1', ['--token-file', file]);
    expect(sent).toMatchObject({ code: 0 });
    expect(sent.stdout).toMatch(/^HTTP 202/);
    await waitFor(async () => ((await linesAbout('authz-sender-1')).length > 0 ? true : undefined), {
      what: "a function's log to show bpa-sender's ping",
      timeoutMs: 60_000,
      intervalMs: 1000,
    });
  }, 90_000);

  it('refuses a post without a token (401), and a valid token of any identity the policy does not name (403)', async () => {
    const anonymous = await bpaSend('authz-anonymous-1', []);
    expect(anonymous.code).toBe(1);
    expect(anonymous.stdout).toMatch(/^HTTP 401/);

    // A tenant's ServiceAccount: a tenant may create its tokens, for any audience.
    const tenant = await bpaSend('authz-tenant-1', [
      '--token-file',
      await tokenFileOf('tenant', chain.namespace),
    ]);
    expect(tenant.code).toBe(1);
    expect(tenant.stdout).toMatch(/^HTTP 403/);

    // host-lookup's own ServiceAccount, in the Broker's namespace: `allow-same-namespace` alone
    // would admit it; the policy does not (the functions send as their SinkBindings).
    const sameNamespace = await bpaSend('authz-function-sa-1', [
      '--token-file',
      await tokenFileOf('host-lookup', chain.functionsNamespace),
    ]);
    expect(sameNamespace.code).toBe(1);
    expect(sameNamespace.stdout).toMatch(/^HTTP 403/);

    // Nothing reached a function (an accepted ping reaches one within seconds: the test above).
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    for (const id of ['authz-anonymous-1', 'authz-tenant-1', 'authz-function-sa-1'])
      expect(await linesAbout(id)).toEqual([]);
  }, 60_000);

  it('the broker ingress logs why it refused: no token, and a subject no policy names', async () => {
    const pods = await core().listNamespacedPod({
      namespace: 'knative-eventing',
      labelSelector: 'app.kubernetes.io/component=broker-ingress',
    });
    const name = pods.items[0]?.metadata?.name ?? '';
    const log = await waitFor(
      async () => {
        const text = await core().readNamespacedPodLog({ namespace: 'knative-eventing', name });
        return text.includes('token is from subject') ? text : undefined;
      },
      { what: "the broker ingress' log to name the refused subject", timeoutMs: 30_000, intervalMs: 1000 },
    );
    expect(log).toContain(`system:serviceaccount:${chain.namespace}:tenant`);
  });
});

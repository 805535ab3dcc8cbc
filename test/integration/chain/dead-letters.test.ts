/**
 * Dead letters through the whole chain, on both engines (test/support/chain-engine.ts):
 * - an outage host-lookup cannot get past (its lease file is unreadable): every delivery of the
 *   Provisioning's add event is answered 503 LeasesUnreadable, the Provisioning's status says so
 *   while the Trigger retries (HostsResolved Unknown, shared/k8s/retrying-condition.ts), and after
 *   the manifests' retries (triggers-host-lookup.yaml: 5, exponential, 0.5 s) the event reaches
 *   the manifests' dead-letter sink with knativeerrorcode 503 and knativeerrordest naming
 *   host-lookup, after exactly 1 + 5 attempts (host-lookup's `event` log lines of that event id);
 * - recovery: once the lease file is readable again the sweep (the manifests' PingSource, once a
 *   minute) re-resolves the Unknown HostsResolved and the chain reaches JobLaunched;
 * - a poison event posted to the Broker's ingress as `bpa send` would (a valid CloudEvent of the
 *   ApiServerSource's add type whose data is not a Kubernetes object): host-lookup answers 400,
 *   which Knative never retries (knative.dev/eventing pkg/kncloudevents/retries.go
 *   SelectiveRetry: 5xx, 404, 408, 409, 429 only), so it is dead-lettered after one attempt.
 *
 * The outage: the lease path is a directory, not a file. That is what a real one looks like when
 * the lease file is mounted into the pod before the DHCP server first wrote it (a bind mount of a
 * missing source path makes a directory there, kubelet's hostPath and `docker -v` alike): stat
 * succeeds, every read fails with EISDIR, and root is no exception (chmod 000 would be).
 *
 * On `knative` host-lookup's pod reads the lease file's directory through a volume (a hostPath
 * PersistentVolume of the node, test/support/chain-engine.ts filesForPods), as a real pod reads a
 * mounted file: the directory is bind-mounted, so the file the suite puts in place of the
 * directory is what the pod then reads.
 *
 * Real: kube-apiserver, etcd, Kubernetes' controllers, the node (a real kubelet and containerd,
 * local/kubelet-node) running the KUD Job and, on `knative`, the functions from their images; on
 * `knative`, Knative Eventing's MT broker (its filter's retries and dead-letter dispatch),
 * ApiServerSource, PingSource (mtping) and event_display as the dead-letter sink. IMITATION: the
 * KUD installer (the test image bpa.local/test/kud-waits:1), the lease file (an ISC dhcpd file
 * written by the suite), on `knative` the Knative Services as Deployments (the local Serving
 * overlay), and on `embedded` the broker and sources (local/broker, local/sources).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from '@jest/globals';
import { renderIscLeaseFile } from '../../../local/lab/lease-file.js';
import { waitFor } from '../../../local/control-plane/index.js';
import { stackNamespace } from '../../../local/stack/index.js';
import {
  describeOnEngines,
  useChainEngine,
  type ChainEngine,
  type DeadLetter,
} from '../../support/chain-engine.js';
import { createKudSshKeySecret, kudTestImage } from '../../support/node.js';
import { conditionOf, createBareMetalHost, provisioningObject } from '../functions/support/fixtures.js';

const host = { label: 'master-1', mac: '52:54:00:d1:00:01', ip: '10.30.0.1' };
/**
 * knativeerrordest: the subscriber as Knative resolves the Trigger's ref (knative.dev/pkg
 * resolver; a cluster-local Knative Service's address is the same). The embedded broker dials
 * host-lookup on loopback but names it so too (local/broker/load-config.ts clusterAddressOf).
 */
const hostLookupAddress = `http://host-lookup.${stackNamespace}.svc.cluster.local`;

describeOnEngines('dead letters through the chain', (engine) => {
  /** The lease file's directory (a volume of host-lookup's pod on `knative`, see the header). */
  let leasesDir = '';
  const leasePath = () => join(leasesDir, 'dhcpd.leases');
  const chain: ChainEngine = useChainEngine(engine, {
    namespacePrefix: 'chain-dead-letters',
    prepare: async ({ kubeConfig, namespace, functionsNamespace }) => {
      // The KUD Job runs in the functions' namespace and mounts the operator's key there.
      await createKudSshKeySecret(kubeConfig, functionsNamespace);
      leasesDir = await mkdtemp(join(tmpdir(), 'bpa-dead-letters-leases-'));
      // The outage from the start: the lease path is a directory (see the header).
      await mkdir(leasePath());
      await createBareMetalHost(kubeConfig, { name: 'lease-host', namespace, bootMac: host.mac, nics: [] });
    },
    config: ({ namespace }) => ({
      BMH_NAMESPACE: namespace,
      LEASES_SOURCE: leasePath(),
      KUD_IMAGE: kudTestImage.waits,
      SWEEP_NAMESPACES: namespace,
    }),
  });
  afterAll(async () => {
    if (!leasesDir) return;
    await rm(leasesDir, { recursive: true, force: true });
  });

  /** The first dead letter `match` accepts, once the sink has it. */
  const deadLetterOf = (match: (letter: DeadLetter) => boolean, what: string) =>
    waitFor(async () => (await chain.deadLetters()).find(match), {
      what: `the dead letter of ${what}`,
      timeoutMs: 90_000,
      intervalMs: 1000,
    });
  /** host-lookup's `event` lines (one per delivery it answered) of CloudEvent `id`. */
  const attemptsOf = async (id: string) =>
    (await chain.functionLog('host-lookup')).filter((line) => line.msg === 'event' && line.ce_id === id);

  it('an unreadable lease file: 503 LeasesUnreadable, HostsResolved Unknown while retried, then the dead-letter sink after 1 + 5 attempts', async () => {
    const { namespace } = chain;
    await chain.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify(
        provisioningObject({ name: 'unreadable', namespace, cluster: 'unreadable', masters: [host] }),
      ),
    );
    const retrying = await chain.waitForCondition('unreadable', 'HostsResolved', 'Unknown', 60_000);
    expect(conditionOf(retrying, 'HostsResolved')).toMatchObject({
      reason: 'LeasesUnreadable',
      observedGeneration: 1,
    });
    expect(conditionOf(retrying, 'HostsResolved')?.message).toMatch(
      new RegExp(
        `^Cannot read the lease file ${leasePath().replace(/[.]/g, '\\.')}: .*EISDIR.* \\(will be retried\\)$`,
      ),
    );

    const letter = await deadLetterOf(
      (d) =>
        d.type === 'dev.knative.apiserver.resource.add' &&
        d.subject?.endsWith('/provisionings/unreadable') === true,
      'the add event of Provisioning unreadable',
    );
    process.stderr.write(`[dead-letters ${engine}] add event dead letter: ${JSON.stringify(letter)}\n`);
    expect(letter.errorCode).toBe('503');
    expect(letter.errorDest).toBe(hostLookupAddress);
    // The sink gets the event only after the last retry: every attempt is in the log by now
    // (waited for only because a pod's log is read through the node's log server).
    const attempts = await waitFor(
      async () => {
        const lines = await attemptsOf(letter.id);
        return lines.length >= 6 ? lines : undefined;
      },
      { what: `6 attempts of ${letter.id} in host-lookup's log`, timeoutMs: 15_000, intervalMs: 500 },
    ).catch(async () => attemptsOf(letter.id));
    expect(attempts.map((a) => [a.status, a['reason']])).toEqual(
      Array.from({ length: 6 }, () => [503, 'LeasesUnreadable']),
    );

    // Every other event about it (the update its own status write caused) runs out of retries
    // too: none is left in flight, so only the sweep can bring it on (the next test).
    const answered = await waitFor(
      async () => {
        const ids = new Set(
          (await chain.functionLog('host-lookup'))
            .filter((l) => l.msg === 'event' && l.namespace === namespace && l.name === 'unreadable')
            .map((l) => l.ce_id),
        );
        const dead = new Set((await chain.deadLetters()).map((d) => d.id));
        return [...ids].every((id) => id && dead.has(id)) ? ids : undefined;
      },
      {
        what: 'every event about Provisioning unreadable in the dead-letter sink',
        timeoutMs: 90_000,
        intervalMs: 1000,
      },
    );
    expect(answered.size).toBeGreaterThanOrEqual(1);
  }, 240_000);

  it('once the lease file is readable again, the sweep takes the Provisioning to JobLaunched', async () => {
    const path = leasePath();
    await rm(path, { recursive: true });
    await writeFile(
      path,
      renderIscLeaseFile([{ ...host, role: 'master', bmhName: 'lease-host', inLeaseFile: true }]),
    );
    // No event names the Provisioning any more (all dead-lettered, above): only the sweep, once a
    // minute, can re-drive it.
    const launched = await chain
      .waitForCondition('unreadable', 'JobLaunched', 'True', 180_000)
      .catch(async (error: unknown) => {
        // What the sweep said, to tell a sweep that did not run from one that failed.
        const sweepLines = (await chain.functionLog('host-lookup')).filter((l) => l.msg.startsWith('sweep'));
        process.stderr.write(
          `[dead-letters ${engine}] no recovery; host-lookup's sweep lines:\n${sweepLines
            .slice(-20)
            .map((l) => JSON.stringify(l))
            .join('\n')}\n`,
        );
        throw error;
      });
    expect(conditionOf(launched, 'HostsResolved')).toMatchObject({ status: 'True' });
    expect(launched.status?.nodes).toEqual([expect.objectContaining({ label: host.label, ip: host.ip })]);
    // The hosts were resolved while host-lookup handled a ping: by the sweep.
    const resolved = (await chain.functionLog('host-lookup')).filter(
      (l) => l.msg === 'hosts resolved' && l['cluster'] === 'unreadable',
    );
    expect(resolved.map((l) => l.ce_type)).toEqual(['dev.knative.sources.ping']);
    await chain.releaseKudJob('unreadable', 0);
  }, 300_000);

  it('a poison event (not a Kubernetes object) is answered 400, not retried, and dead-lettered at once', async () => {
    const id = randomUUID();
    const response = await fetch(chain.ingressUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'ce-specversion': '1.0',
        'ce-id': id,
        'ce-type': 'dev.knative.apiserver.resource.add',
        'ce-source': 'https://poison.test/',
        'ce-subject': `/apis/bpa.akraino.org/v1alpha1/namespaces/${chain.namespace}/provisionings/poison`,
        'ce-kind': 'Provisioning',
      },
      body: JSON.stringify({ hello: 'not a Kubernetes object' }),
    });
    expect(response.status).toBe(202);
    const letter = await deadLetterOf((d) => d.id === id, `poison event ${id}`);
    process.stderr.write(`[dead-letters ${engine}] poison dead letter: ${JSON.stringify(letter)}\n`);
    expect(letter).toMatchObject({ type: 'dev.knative.apiserver.resource.add', errorCode: '400' });
    expect(letter.errorDest).toBe(hostLookupAddress);
    const attempts = await waitFor(
      async () => {
        const lines = await attemptsOf(id);
        return lines.length >= 1 ? lines : undefined;
      },
      { what: `the attempt of ${id} in host-lookup's log`, timeoutMs: 15_000, intervalMs: 500 },
    );
    expect(attempts.map((a) => a.status)).toEqual([400]);
  }, 180_000);
});

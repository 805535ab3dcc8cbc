/**
 * The live view in a real headless Chromium (Debian's `chromium`, driven by playwright-core):
 * a Provisioning runs through the embedded stack while the page is open; the page must show
 * each condition turning True and the events arriving, and show an event's data on click. The
 * stack runs on its own one-machine cluster, so the KUD Job is run by Kubernetes' Job controller on
 * the real node (local/kubelet-node: kubelet + containerd), its container the project's
 * kud-stand-in image (real ansible-playbook) reaching the lab's real sshd hosts on the node's lab
 * bridge. Needs root.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubernetesObjectApi } from '@kubernetes/client-node';
import { chromium, type Browser } from 'playwright-core';
import { applyObject } from '../../local/control-plane/apply.js';
import { repoRoot } from '../../local/control-plane/repo-root.js';
import { freeLoopbackPort } from '../../local/control-plane/free-port.js';
import { labProvisioning } from '../../local/lab/lab-definition.js';
import { startLab, type Lab } from '../../local/lab/lab.js';
import { startStackCluster, type StackCluster } from '../../local/stack/cluster.js';
import { CloudEvent, HTTP } from 'cloudevents';
import { liveViewPage } from '../../local/live-view/page.js';
import { startLiveView } from '../../local/live-view/server.js';
import { silentLogger } from '../../shared/log.js';
import { startStack, type Stack } from '../../local/stack/index.js';

const chromiumPath = '/usr/bin/chromium';
const namespace = 'live-view-e2e';
const cluster = 'live-view-edge';

let stack: Stack | undefined;
let browser: Browser | undefined;
let stackCluster: StackCluster | undefined;
let lab: Lab | undefined;
let dir: string;

beforeAll(async () => {
  if (!existsSync(chromiumPath)) throw new Error(`${chromiumPath} is missing: apt-get install -y chromium`);
  dir = mkdtempSync(join(tmpdir(), 'bpa-live-view-'));
  stackCluster = await startStackCluster({ fallBack: false });
  lab = await startLab({ namespace, network: stackCluster.nodeNetwork! });
  stack = await startStack({
    kubeconfig: stackCluster.kubeconfigPath,
    port: await freeLoopbackPort(),
    log: () => undefined,
    logFile: join(dir, 'stack.log'),
    // The Jobs' images as the real node holds them, then the lab's settings.
    functionsEnv: { ...stackCluster.functionsEnv, ...lab.functionsEnv },
  });
  await lab.applyToCluster(stack.kubeConfig);
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await lab?.stop();
  await stackCluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('the live view', () => {
  it('serves a page whose inline script parses (it is a string in TypeScript: escapes are easy to break)', () => {
    const script = liveViewPage.slice(
      liveViewPage.indexOf('<script>') + 8,
      liveViewPage.indexOf('</script>'),
    );
    expect(script.length).toBeGreaterThan(1000);
    expect(() => new Function(script)).not.toThrow();
  });

  it('follows a cluster’s broker as a subscriber: a POSTed CloudEvent becomes a row, its data is kept, garbage is 400', async () => {
    const standalone = await startLiveView({ host: '127.0.0.1', port: 0, log: silentLogger });
    try {
      const event = new CloudEvent({
        type: 'org.akraino.icn.bpa.cluster.ready',
        source: '/bpa-functions/kud-job-launch',
        subject: 'namespaces/edge/provisionings/e1',
        data: { cluster: 'e1' },
      });
      const message = HTTP.binary(event);
      const posted = await fetch(standalone.cloudEventsUrl, {
        method: 'POST',
        headers: message.headers as Record<string, string>,
        body: message.body as string,
      });
      expect(posted.status).toBe(202);
      const state = (await (await fetch(`${standalone.url}api/state`)).json()) as {
        events: { id: string; type: string; trigger: string; status: string }[];
      };
      expect(state.events).toEqual([
        expect.objectContaining({
          id: event.id,
          type: event.type,
          trigger: 'subscriber',
          status: 'received',
        }),
      ]);
      const kept = (await (await fetch(`${standalone.url}api/events/${event.id}`)).json()) as {
        attributes: Record<string, unknown>;
        data: unknown;
      };
      expect(kept.attributes.subject).toBe('namespaces/edge/provisionings/e1');
      expect(kept.data).toEqual({ cluster: 'e1' });
      const garbage = await fetch(standalone.cloudEventsUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"not":"an event"}',
      });
      expect(garbage.status).toBe(400);
    } finally {
      await standalone.stop();
    }
  });

  it('shows a Provisioning’s conditions turning True and the events that moved it', async () => {
    const page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(stack!.liveViewUrl);
    await page.waitForSelector('#conn.live', { timeout: 30_000 });
    await expect(page.locator('#resources').textContent()).resolves.toContain('No Provisioning');

    await applyObject(
      KubernetesObjectApi.makeApiClient(stack!.kubeConfig),
      labProvisioning(namespace, cluster) as never,
    );
    const card = page.locator(`[data-resource="Provisioning/${namespace}/${cluster}"]`);
    await card.waitFor({ timeout: 30_000 });
    // Each condition turns True on the open page, in the order the chain sets them.
    for (const type of ['HostsResolved', 'InventoryRendered', 'JobLaunched', 'KudInstalled', 'Ready']) {
      await card.locator(`[data-condition="${type}"][data-status="True"]`).waitFor({ timeout: 120_000 });
    }
    // Per-node state from status.nodes.
    const nodesText = await card.locator('table').textContent();
    for (const host of lab!.hosts) expect(nodesText).toContain(host.ip);

    // The events arrived as they happened, with their trigger and an HTTP status.
    for (const type of [
      'dev.knative.apiserver.resource.add',
      'org.akraino.icn.bpa.hosts.resolved',
      'org.akraino.icn.bpa.inventory.rendered',
      'org.akraino.icn.bpa.kud.job.launched',
      'org.akraino.icn.bpa.cluster.ready',
    ]) {
      await page.locator(`#events tr.event[data-type="${type}"]`).first().waitFor({ timeout: 30_000 });
    }
    const resolvedRow = page.locator(
      '#events tr.event[data-type="org.akraino.icn.bpa.hosts.resolved"][data-trigger="inventory-render-hosts-resolved"]',
    );
    await expect(resolvedRow.first().getAttribute('data-status')).resolves.toBe('200');

    // Clicking an event shows its attributes and data.
    await resolvedRow.first().click();
    await page.locator('#details-data', { hasText: '"nodes"' }).waitFor({ timeout: 10_000 });
    const attributes = JSON.parse((await page.locator('#details-attributes').textContent()) ?? '{}');
    expect(attributes).toMatchObject({
      type: 'org.akraino.icn.bpa.hosts.resolved',
      subject: `namespaces/${namespace}/provisionings/${cluster}`,
      cluster,
    });
    const data = JSON.parse((await page.locator('#details-data').textContent()) ?? '{}');
    expect(data.nodes.map((n: { label: string }) => n.label)).toEqual(['master-1', 'master-2', 'worker-1']);

    // A second Provisioning naming the same cluster: its card says why it does nothing.
    const rival = labProvisioning(namespace, cluster) as { metadata: { name: string } };
    rival.metadata.name = `${cluster}-rival`;
    await applyObject(KubernetesObjectApi.makeApiClient(stack!.kubeConfig), rival as never);
    const rivalCard = page.locator(`[data-resource="Provisioning/${namespace}/${cluster}-rival"]`);
    const inUse = rivalCard.locator(
      '[data-condition="Ready"][data-status="False"][data-reason="ClusterNameInUse"]',
    );
    await inUse.waitFor({ timeout: 60_000 });
    await expect(inUse.textContent()).resolves.toContain('ClusterNameInUse');
    await expect(rivalCard.locator('.msg').first().textContent()).resolves.toContain(
      `Cluster ${cluster} is already provisioned by ${namespace}/${cluster}`,
    );

    const artifacts = join(repoRoot(), 'test', 'artifacts');
    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'live-view.png'), fullPage: true });
    await page.close();
  }, 300_000);
});

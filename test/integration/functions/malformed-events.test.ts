/**
 * Each function answers malformed or invalid CloudEvents with 400 and a JSON error, and stays
 * healthy: no id, a type it does not take, data failing the type's schema, a body that is not
 * JSON, a huge body.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../../functions/software-install/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { ChainHarness } from './support/chain-harness.js';

const cluster = useTestCluster();

/** A type each function accepts, for the "bad data" case. */
const acceptedType: Record<string, string> = {
  'host-lookup': 'dev.knative.apiserver.resource.add',
  'inventory-render': 'org.akraino.icn.bpa.hosts.resolved',
  'kud-job-launch': 'org.akraino.icn.bpa.inventory.rendered',
  'software-install': 'org.akraino.icn.bpa.cluster.ready',
};

const headers = (type: string, extra: Record<string, string> = {}) => ({
  'ce-specversion': '1.0',
  'ce-id': 'e-1',
  'ce-source': '/test',
  'ce-type': type,
  'content-type': 'application/json',
  ...extra,
});

describe('malformed CloudEvents', () => {
  let harness: ChainHarness;

  beforeAll(async () => {
    harness = new ChainHarness(cluster.kubeConfig, {});
    await harness.start([hostLookup, inventoryRender, kudJobLaunch, softwareInstall]);
  });
  afterAll(() => harness?.stop());

  it.each(Object.keys(acceptedType))('%s answers 400 with a JSON error and stays healthy', async (name) => {
    const url = harness.url(name);
    const type = acceptedType[name] as string;
    const { 'ce-id': _id, ...withoutId } = headers(type);
    const requests: { what: string; headers: Record<string, string>; body: string }[] = [
      { what: 'no id', headers: withoutId, body: '{}' },
      { what: 'wrong type', headers: headers('com.example.unknown'), body: '{}' },
      {
        what: 'data not matching its schema',
        headers: headers(type),
        body: JSON.stringify({ nodes: 'none' }),
      },
      { what: 'not JSON', headers: headers(type), body: '{"metadata": ' },
      {
        what: 'huge body',
        headers: headers(type),
        body: JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) }),
      },
    ];
    for (const request of requests) {
      const response = await fetch(url, { method: 'POST', headers: request.headers, body: request.body });
      const body = (await response.json()) as { error?: { reason?: string; message?: string } };
      expect({ what: request.what, status: response.status }).toEqual({ what: request.what, status: 400 });
      expect(body.error?.reason).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(body.error?.message).toEqual(expect.any(String));
    }
    expect((await fetch(`${url}/health/liveness`)).status).toBe(200);
    expect((await fetch(`${url}/health/readiness`)).status).toBe(200);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('faas_invocations');
  });

  it('exposes the domain metrics on /metrics before the first event', async () => {
    const text = async (name: string) => (await fetch(`${harness.url(name)}/metrics`)).text();
    expect(await text('host-lookup')).toContain('# TYPE bpa_nodes_resolved_total counter');
    expect(await text('inventory-render')).toContain('# TYPE bpa_inventories_rendered_total counter');
    const kud = await text('kud-job-launch');
    for (const metric of [
      'bpa_jobs_launched_total counter',
      'bpa_jobs_finished_total counter',
      'bpa_kud_run_duration_seconds histogram',
      'bpa_time_to_ready_seconds histogram',
    ])
      expect(kud).toContain(`# TYPE ${metric}`);
    const software = await text('software-install');
    for (const metric of [
      'bpa_software_host_installs_total counter',
      'bpa_ssh_connect_duration_seconds histogram',
      'bpa_ssh_command_duration_seconds histogram',
    ])
      expect(software).toContain(`# TYPE ${metric}`);
  });
});

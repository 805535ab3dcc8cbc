/** Driving host-lookup's sweep until the watched host index has taken a status write. */
import { expect } from '@jest/globals';
import type { KubeConfig } from '@kubernetes/client-node';
import { definition as hostLookup } from '../../../../functions/host-lookup/index.js';
import { ChainHarness, pingEvent } from './chain-harness.js';

/** host-lookup alone, behind its real HTTP server, its hosts and sweep in `namespace`; NIC IPs only. */
export async function startHostLookup(kubeConfig: KubeConfig, namespace: string): Promise<ChainHarness> {
  const harness = new ChainHarness(kubeConfig, {
    BMH_NAMESPACE: namespace,
    IP_SOURCES: 'nics',
    SWEEP_NAMESPACES: namespace,
  });
  await harness.start([hostLookup]);
  return harness;
}

/** One sweep of host-lookup; the events it sent about Provisioning `name` (the others' are re-sends). */
export const sweepFor = (harness: () => ChainHarness, name: string) => async () => {
  const chain = harness();
  expect((await chain.deliver('host-lookup', pingEvent())).status).toBe(204);
  return chain.collector
    .drain()
    .filter((event) => (event.data as { provisioning?: { name?: string } }).provisioning?.name === name);
};

/**
 * Sweeps until `done` holds; returns the events the last sweep sent. The watched host index
 * takes a status write within milliseconds, but a sweep may run just before it does.
 */
export async function waitForSweep(
  done: () => Promise<boolean>,
  ping: () => Promise<{ type: string }[]>,
): Promise<{ type: string }[]> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const sent = await ping();
    if (await done()) return sent;
    // Not done: nothing may have been sent.
    expect(sent).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the sweep never got there');
}

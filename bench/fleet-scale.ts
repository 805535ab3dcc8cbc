import { runBurst, type RunResult } from './fleet/burst.js';
import type { BenchModule } from './module.js';

/**
 * Fleet scale (issue 13 item 1): on a fresh real control plane (etcd + kube-apiserver with
 * Metal3's BareMetalHost CRD) and the embedded stack (broker, local ApiServerSources, the
 * functions), N realistic BareMetalHosts (status.hardware with four NICs, CPU, storage, as
 * Metal3's inspection writes it), then P Provisionings of K nodes applied in one burst. Prints
 * the time until all P have JobLaunched, the API requests and bytes the functions read per
 * Provisioning (an instrumented client: requests counted as authenticated, bytes as read from
 * each socket, TLS included), and host-lookup's peak RSS (it runs in a process of its own). The
 * first Provisioning is a warm-up (host-lookup lists and starts its watch), outside the figures.
 * Guarded: the run stops when MemAvailable falls under 4 GiB and says how far it got.
 *
 * Sizes: BENCH_FLEET_HOSTS (comma-separated runs, default 1000,10000), BENCH_FLEET_PROVISIONINGS
 * (as many as the smallest fleet holds with one owner per host: 99), BENCH_FLEET_NODES (10). Each
 * Provisioning claims its hosts (one PATCH of spec.consumerRef per host, no GET). Goals: the largest run within 1.3x the smallest, and at most
 * 50 KB read by host-lookup per Provisioning after warm-up.
 */
const sizes = (process.env.BENCH_FLEET_HOSTS ?? '1000,10000').split(',').map(Number);
const nodesPer = Number(process.env.BENCH_FLEET_NODES ?? 10);
// One owner per host (contract section 12): the burst and the warm-up need hosts of their own,
// so by default as many Provisionings as the smallest fleet holds (99 of 10 nodes in 1000 hosts,
// plus the warm-up). More than that leaves the rest HostInUse and the run stalls.
const provisionings = Number(
  process.env.BENCH_FLEET_PROVISIONINGS ?? Math.min(1000, Math.floor(Math.min(...sizes) / nodesPer) - 1),
);

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`;

export const fleetScaleBench: BenchModule = {
  name: `fleet scale: ${provisionings} Provisionings of ${nodesPer} nodes in one burst against ${sizes.join(' and ')} BareMetalHosts`,
  run: async (print) => {
    const results: RunResult[] = [];
    for (const hosts of sizes) {
      const result = await runBurst({ hosts, provisionings, nodesPer, log: print, hostLookupProcess: true });
      results.push(result);
      const per = (value: number) => value / Math.max(1, provisionings);
      if (result.burstSeconds === undefined || !result.hostLookup || !result.others) {
        print(
          `${hosts} hosts: stopped (${result.stoppedBy}) after ${result.hostsCreated} hosts and ${result.provisioningsCreated} Provisionings created, ${result.launched} launched, ${result.sweeps} sweep(s)`,
        );
        continue;
      }
      print(
        `${hosts} hosts: all ${provisionings} JobLaunched ${result.burstSeconds.toFixed(1)} s after the burst began` +
          (result.sweeps
            ? ` (${result.launchedBeforeSweep} through the events alone, the rest after ${result.sweeps} sweep(s) re-drove lost events)`
            : '') +
          '; ' +
          `host-lookup per Provisioning ${per(result.hostLookup.requests).toFixed(1)} requests, ${kb(per(result.hostLookup.bytes))} read ` +
          `(BareMetalHosts: ${per(result.hostLookup.hostRequests).toFixed(1)} requests, ${kb(per(result.hostLookup.hostBytes))}), ` +
          `RSS ${mib(result.hostLookup.warmRssBytes)} after warm-up, peak ${mib(result.hostLookup.peakRssBytes)}; ` +
          `inventory-render + kud-job-launch per Provisioning ${per(result.others.requests).toFixed(1)} requests, ${kb(per(result.others.bytes))} read`,
      );
    }
    const first = results[0];
    const last = results.at(-1);
    if (first?.burstSeconds && last?.burstSeconds && results.length > 1)
      print(
        `goal: ${last.hosts}-host run ${(last.burstSeconds / first.burstSeconds).toFixed(2)}x the ${first.hosts}-host run (≤ 1.3x); ` +
          `host-lookup reads ${kb((last.hostLookup?.bytes ?? 0) / provisionings)} per Provisioning in all, ` +
          `${kb((last.hostLookup?.hostBytes ?? 0) / provisionings)} of BareMetalHosts (≤ 50 KB)`,
      );
  },
};

import { describeRequests, totalRequests } from './fleet/apiserver-metrics.js';
import { floorRecipe, runBurst, type RunResult } from './fleet/burst.js';
import { describeAccounts, runKnativeBurst, type KnativeBurstResult } from './fleet/knative-burst.js';
import type { BenchModule } from './module.js';

/**
 * The chain at the API server's speed (issue 26 item 4): for 200 and 1,000 Provisionings of 3
 * and 10 nodes, each size on a fresh one-machine control plane with the embedded engine, prints
 *   - the time from the burst's first create until every Provisioning has JobLaunched;
 *   - the API requests per Provisioning, by the API server's own `apiserver_request_total`
 *     (every client: the functions, the event sources; the bench's creates subtracted), with the
 *     largest kinds;
 *   - in the same run, the floor: the same writes (the Provisioning, host claims, inventory
 *     ConfigMaps, Job, status writes and Events, as many per Provisioning as the chain made) by
 *     one plain client as fast as the API server takes them (bench/fleet/floor.ts);
 * and the goals: chain time at most 3x the floor, at most 15 API requests per Provisioning.
 * Then, for the sizes in BENCH_CHAIN_KNATIVE_SIZES (default `200x3`; empty for none; root only),
 * the same burst on real Knative with the functions as pods of the real node
 * (bench/fleet/knative-burst.ts: requests by ServiceAccount from the API server's flow-control
 * counters, the floor on the same API server with the embedded run's recipe).
 * Sizes: BENCH_CHAIN_SIZES, e.g. `200x3,1000x10` (Provisionings x nodes; the default is all four).
 */
function parseSizes(variable: string, fallback: string) {
  const text = process.env[variable] ?? fallback;
  return text
    .split(',')
    .filter((size) => size.trim() !== '')
    .map((size) => {
      const [provisionings, nodes] = size.split('x').map(Number);
      if (!provisionings || !nodes) throw new Error(`${variable}: '${size}' is not <provisionings>x<nodes>`);
      return { provisionings, nodes };
    });
}
const sizes = parseSizes('BENCH_CHAIN_SIZES', '200x3,200x10,1000x3,1000x10');
const knativeSizes = parseSizes('BENCH_CHAIN_KNATIVE_SIZES', '200x3');

const goalRatio = 3;
const goalRequests = 15;

function report(result: RunResult, provisionings: number, nodes: number, print: (line: string) => void) {
  const label = `${provisionings} x ${nodes} nodes`;
  if (result.burstSeconds === undefined || !result.apiServer) {
    print(`${label}: stopped (${result.stoppedBy}) with ${result.launched} of ${provisionings} launched`);
    return;
  }
  const requests = (totalRequests(result.apiServer) - (result.benchRequests ?? 0)) / provisionings;
  const floor = result.floor;
  const ratio = floor ? result.burstSeconds / floor.seconds : undefined;
  print(
    `${label}: JobLaunched for all in ${result.burstSeconds.toFixed(1)} s ` +
      `(${(provisionings / result.burstSeconds).toFixed(1)}/s)` +
      (result.sweeps ? `, ${result.sweeps} sweep(s) re-drove lost events` : '') +
      `; API requests per Provisioning ${requests.toFixed(1)} (goal ≤ ${goalRequests}: ${requests <= goalRequests ? 'met' : 'not met'})`,
  );
  print(`  largest per Provisioning: ${describeRequests(result.apiServer, provisionings, 12)}`);
  if (floor && ratio !== undefined) {
    const r = floor.recipe;
    print(
      `  floor: the same writes (1 Provisioning, ${r.hostPatches} host patches, ${r.configMaps} ConfigMaps, ${r.jobs} Job, ` +
        `${r.statusWrites} status writes, ${r.events} Events each) by one client in ${floor.seconds.toFixed(1)} s; ` +
        `chain ${ratio.toFixed(1)}x the floor (goal ≤ ${goalRatio}x: ${ratio <= goalRatio ? 'met' : 'not met'})`,
    );
  }
}

function reportKnative(
  result: KnativeBurstResult,
  provisionings: number,
  nodes: number,
  print: (line: string) => void,
) {
  const label = `real Knative, ${provisionings} x ${nodes} nodes`;
  if (result.burstSeconds === undefined || !result.byAccount) {
    print(`${label}: stopped (${result.stoppedBy}) with ${result.launched} of ${provisionings} launched`);
    return;
  }
  const accounts = describeAccounts(result.byAccount, provisionings);
  print(
    `${label}: JobLaunched for all in ${result.burstSeconds.toFixed(1)} s ` +
      `(${(provisionings / result.burstSeconds).toFixed(1)}/s); API requests per Provisioning ` +
      `${accounts.total.toFixed(1)} (goal ≤ ${goalRequests}: ${accounts.total <= goalRequests ? 'met' : 'not met'})`,
  );
  print(`  by ServiceAccount per Provisioning: ${accounts.line}`);
  if (result.allClients)
    print(
      `  every client, largest per Provisioning: ${describeRequests(result.allClients, provisionings, 8)}`,
    );
  if (result.floor) {
    const ratio = result.burstSeconds / result.floor.seconds;
    print(
      `  floor on the same API server: ${result.floor.seconds.toFixed(1)} s; chain ${ratio.toFixed(1)}x the floor ` +
        `(goal ≤ ${goalRatio}x: ${ratio <= goalRatio ? 'met' : 'not met'})`,
    );
  } else
    // The floor writes what the embedded run of the same size wrote (its recipe).
    print(
      `  floor: not measured (no embedded run of ${provisionings}x${nodes} in this run; add it to BENCH_CHAIN_SIZES)`,
    );
}

export const chainSpeedBench: BenchModule = {
  name:
    `chain speed: ${sizes.map((s) => `${s.provisionings}x${s.nodes}`).join(', ')} Provisionings x nodes against the floor` +
    (knativeSizes.length
      ? `; on the real engine (functions as pods) ${knativeSizes.map((s) => `${s.provisionings}x${s.nodes}`).join(', ')}`
      : ''),
  run: async (print) => {
    const recipes = new Map<string, RunResult>();
    for (const { provisionings, nodes } of sizes) {
      // One owner per host: every Provisioning and the warm-up need hosts of their own.
      const hosts = (provisionings + 1) * nodes;
      const result = await runBurst({ hosts, provisionings, nodesPer: nodes, log: print, floor: true });
      report(result, provisionings, nodes, print);
      recipes.set(`${provisionings}x${nodes}`, result);
    }
    if (knativeSizes.length > 0 && process.getuid?.() !== 0) {
      print('real Knative: skipped (the real node needs root)');
      return;
    }
    for (const { provisionings, nodes } of knativeSizes) {
      const embedded = recipes.get(`${provisionings}x${nodes}`)?.apiServer;
      const result = await runKnativeBurst({
        provisionings,
        nodesPer: nodes,
        log: print,
        ...(embedded ? { floorRecipe: floorRecipe(embedded, provisionings) } : {}),
      });
      reportKnative(result, provisionings, nodes, print);
    }
  },
};

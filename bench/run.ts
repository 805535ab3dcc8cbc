import { brokerBench } from './broker.js';
import { clusterBench } from './cluster.js';
import { chainSpeedBench } from './chain-speed.js';
import { cliBench } from './cli.js';
import { containerImagesBench } from './container-images.js';
import { controlPlaneBench } from './control-plane.js';
import { functionServerBench } from './function-server.js';
import { fleetScaleBench } from './fleet-scale.js';
import { functionsBench } from './functions.js';
import { imagesBench } from './images.js';
import { knativeBench } from './knative.js';
import { kubeletNodeBench } from './kubelet-node.js';
import { resolutionBench } from './resolution.js';
import { softwareLifecycleBench } from './software-lifecycle.js';
import { sshFanoutBench } from './ssh-fanout.js';
import { stackBench } from './stack.js';
import type { BenchModule } from './module.js';

/** Benchmarks run in this order by `npm run bench`. Add new modules to the list. */
const benches: BenchModule[] = [
  resolutionBench,
  functionServerBench,
  functionsBench,
  cliBench,
  brokerBench,
  sshFanoutBench,
  softwareLifecycleBench,
  stackBench,
  controlPlaneBench,
  kubeletNodeBench,
  imagesBench,
  containerImagesBench,
  clusterBench,
  fleetScaleBench,
  chainSpeedBench,
  knativeBench,
];

// `npm run bench -- broker functions` runs only the modules whose names contain one of the words.
const wanted = process.argv.slice(2).map((word) => word.toLowerCase());
const selected = wanted.length
  ? benches.filter((bench) => wanted.some((word) => bench.name.toLowerCase().includes(word)))
  : benches;
if (wanted.length && selected.length === 0) {
  process.stderr.write(
    `no benchmark matches ${wanted.join(', ')}; names: ${benches.map((b) => b.name).join('; ')}\n`,
  );
  process.exit(2);
}

const print = (line: string) => process.stdout.write(`${line}\n`);
for (const bench of selected) {
  print(`# ${bench.name}`);
  await bench.run(print);
  print('');
}

import { brokerBench } from './broker.js';
import { clusterBench } from './cluster.js';
import { cliBench } from './cli.js';
import { controlPlaneBench } from './control-plane.js';
import { functionServerBench } from './function-server.js';
import { functionsBench } from './functions.js';
import { imagesBench } from './images.js';
import { resolutionBench } from './resolution.js';
import { softwareLifecycleBench } from './software-lifecycle.js';
import { sshFanoutBench } from './ssh-fanout.js';
import { stackBench } from './stack.js';

/** One benchmark: prints its own figures through `print`. */
export interface BenchModule {
  name: string;
  run: (print: (line: string) => void) => Promise<void> | void;
}

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
  imagesBench,
  clusterBench,
];

const print = (line: string) => process.stdout.write(`${line}\n`);
for (const bench of benches) {
  print(`# ${bench.name}`);
  await bench.run(print);
  print('');
}

// The lease publisher's entry point (dist/bundle/leases-publisher.mjs, in host-lookup's image):
// the sidecar of manifests/components/leases-publisher; see publish.ts and docs/deploy.md.
import { createLogger } from '../../../shared/log.js';
import { leasesPublishUsage, parseLeasesPublishArgs, runLeasesPublisher } from './run.js';

const log = createLogger({ base: { component: 'leases-publisher' } });
const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(leasesPublishUsage);
  process.exit(0);
}
let input;
try {
  input = parseLeasesPublishArgs(argv);
} catch (error) {
  console.error(`${(error as Error).message}\n\n${leasesPublishUsage}`);
  log.error('invalid arguments', { reason: 'InvalidArguments' });
  process.exit(2);
}
const stop = new AbortController();
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => stop.abort());
process.exitCode = await runLeasesPublisher(input, log, stop.signal);

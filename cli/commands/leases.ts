import {
  leasesPublishUsage,
  parseLeasesPublishArgs,
  runLeasesPublisher,
} from '../../functions/host-lookup/leases-publisher/run.js';
import { createLogger } from '../../shared/log.js';
import type { CliCommand, CliIO } from '../command.js';
import { UsageError } from '../command.js';

const usage = `Usage: bpa leases publish --file <lease file> --configmap <namespace>/<name>/<key> [options]

${leasesPublishUsage.split('\n').slice(3).join('\n')}
`;

/** `bpa leases publish`: the lease publisher of host-lookup's image, run by hand. */
export const leasesCommand: CliCommand = {
  name: 'leases',
  usage,
  async run(argv: string[], io: CliIO): Promise<number> {
    const [sub, ...rest] = argv;
    if (sub !== 'publish') throw new UsageError(`expected 'publish', got ${JSON.stringify(sub ?? '')}`);
    let input;
    try {
      input = parseLeasesPublishArgs(rest);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const log = createLogger({
      base: { component: 'leases-publisher' },
      sink: (line) => io.stderr(`${line}\n`),
    });
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      return await runLeasesPublisher(input, log, stop.signal);
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  },
};

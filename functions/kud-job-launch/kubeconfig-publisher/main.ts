// The kubeconfig publisher's entry point (dist/bundle/kubeconfig-publisher.mjs, in the functions'
// image): run by the Job kud-job-launch creates in the functions' namespace on the KUD pod's node;
// see publish.ts and docs/adr/0009-kubeconfig-publisher.md.
import { parseArgs } from 'node:util';
import { describeError } from '../../../shared/errors.js';
import { createLogger } from '../../../shared/log.js';
import { framedKubeconfig, publishInputSchema, readAdminConf } from './publish.js';

const usage = `Usage: kubeconfig-publisher --file <admin.conf>

Checks that <admin.conf> is a kubeconfig and prints it, base64, as one line on stdout for
kud-job-launch to read from this pod's log. It holds no API token and talks to no API server.`;

const log = createLogger({ base: { component: 'kubeconfig-publisher' } });

try {
  const { values } = parseArgs({
    options: { file: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const input = publishInputSchema.safeParse({ file: values.file });
  if (!input.success) {
    console.error(usage);
    log.error('invalid arguments', { reason: 'InvalidArguments' });
    process.exit(2);
  }
  const adminConf = await readAdminConf(input.data.file);
  process.stdout.write(`${framedKubeconfig(adminConf)}\n`);
} catch (error) {
  const { reason, message } = describeError(error);
  log.error('kubeconfig not published', { reason, message });
  process.exit(1);
}

import { parseArgs } from 'node:util';
import type { CliCommand } from '../command.js';
import { UsageError } from '../command.js';
import { runDemo } from '../../local/lab/demo.js';
import { demoOutput } from '../../local/lab/demo-output.js';
import { describeError } from '../../shared/errors.js';

const usage = `Usage: bpa demo [--port N] [--quiet-events] [--keep]

Runs the whole chain on this machine against a simulated lab, and explains each step:
  1. the lab: three BareMetalHosts with inspected NICs, a DHCP lease file, and SSH servers on
     127.0.0.N (simulated in this process with ssh2; nothing is installed anywhere);
  2. the embedded stack: kube-apiserver + etcd, the Knative broker, sources and the four functions;
  3. a Provisioning (2 masters, 1 worker): hosts resolved, inventory rendered, KUD Job launched
     and completed by a simulated Job controller (no kubelet here), cluster Ready;
  4. a Software resource: packages installed over SSH, per-host results;
  5. a summary.
Exit 0 when everything worked; exit 1 naming the step that failed.

Options:
  --port N         broker port, or the first free one from N (default 8080)
  --quiet-events   do not print one line per event delivery
  --keep           keep the stack and live view running after the summary, until Ctrl-C
  -h, --help       this text
`;

export const demoCommand: CliCommand = {
  name: 'demo',
  summary: 'the embedded stack plus a simulated lab, end to end (npm start)',
  usage,
  run: async (argv, io) => {
    let values;
    try {
      ({ values } = parseArgs({
        args: argv,
        allowPositionals: false,
        strict: true,
        options: { port: { type: 'string' }, 'quiet-events': { type: 'boolean' }, keep: { type: 'boolean' } },
      }));
    } catch (error) {
      throw new UsageError(describeError(error).message);
    }
    const port = values.port === undefined ? undefined : Number(values.port);
    if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535))
      throw new UsageError(`--port must be a port number (1-65535), not ${JSON.stringify(values.port)}`);
    const out = demoOutput(io.stdout, process.stdout.isTTY === true && !process.env.NO_COLOR);
    const result = await runDemo({
      out,
      ...(port ? { port } : {}),
      showEvents: !values['quiet-events'],
      ...(values.keep
        ? {
            keepUntil: () =>
              new Promise<void>((resolve) => {
                process.once('SIGINT', () => resolve());
                process.once('SIGTERM', () => resolve());
              }),
          }
        : {}),
    });
    if (!result.ok) io.stderr(`bpa demo: failed at step "${result.failedStep}": ${result.message}\n`);
    return result.ok ? 0 : 1;
  },
};

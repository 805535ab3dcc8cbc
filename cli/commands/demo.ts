import type { CliCommand } from '../command.js';
import { UsageError } from '../command.js';
import { runDemo } from '../../local/lab/demo.js';
import { demoOutput } from '../../local/lab/demo-output.js';
import { engineFlag, parseFlags, portFlag } from '../flags.js';

const usage = `Usage: bpa demo [--engine embedded|knative] [--no-node] [--port N] [--quiet-events] [--keep]

Runs the whole chain on this machine against a lab of three hosts, and explains each step:
  1. the one-machine cluster (bpa cluster): etcd, kube-apiserver, kube-controller-manager,
     kube-scheduler and a real node (containerd, kubelet, kube-proxy) with the project's
     images;
  2. the lab: three BareMetalHosts with inspected NICs, a DHCP lease file, and a real OpenSSH
     sshd per host in its own network namespace on the node's network (apt-get there is
     recorded and answered, never run; nothing is installed anywhere);
  3. the event engine and the four functions: the embedded stack (an in-process Knative broker
     and sources, the functions in this process), or with --engine knative real Knative
     Eventing on the node (built from its Go modules, run from its images) with the
     functions as pods of their images;
  4. a Provisioning (2 masters, 1 worker): hosts resolved, inventory rendered, KUD Job launched
     and run on the node by Kubernetes' Job controller (its container is the KUD installer
     stand-in: real Ansible reads the inventory and pings every host), cluster Ready;
  5. a Software resource: packages installed over SSH, per-host results;
  6. a summary.
Without root or network namespaces it says so in one line and runs as with --no-node.
Exit 0 when everything worked; exit 1 naming the step that failed.

Options:
  --engine E       embedded (default) or knative: real Knative Eventing, installed from its own
                   config/ on the node (the first run builds it: minutes; docs/knative.md);
                   needs the node
  --no-node        the control plane alone, lab hosts simulated in this process (ssh2 on
                   127.0.0.N); nothing runs the KUD Job, so the demo ends once it is launched
  --port N         broker port, or the first free one from N (default 8080)
  --quiet-events   do not print one line per event delivery
  --keep           keep the stack and live view running after the summary, until Ctrl-C
  -h, --help       this text
`;

export const demoCommand: CliCommand = {
  name: 'demo',
  usage,
  run: async (argv, io) => {
    const values = parseFlags(argv, {
      port: { type: 'string' },
      'quiet-events': { type: 'boolean' },
      keep: { type: 'boolean' },
      'no-node': { type: 'boolean' },
      engine: { type: 'string' },
    });
    const port = portFlag(values.port);
    const engine = engineFlag(values.engine);
    if (engine === 'knative' && values['no-node'])
      throw new UsageError('--engine knative runs Knative on the node; it cannot be used with --no-node');
    const out = demoOutput(io.stdout, process.stdout.isTTY === true && !process.env.NO_COLOR);
    const result = await runDemo({
      out,
      ...(port ? { port } : {}),
      showEvents: !values['quiet-events'],
      node: !values['no-node'],
      engine,
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

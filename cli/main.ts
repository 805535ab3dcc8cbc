import type { CliCommandEntry, CliIO } from './command.js';
import { UsageError } from './command.js';
import { describeError } from '../shared/errors.js';

/** Every command, in `bpa --help` order; a command's module is imported only when it runs. */
export const commands: CliCommandEntry[] = [
  {
    name: 'render',
    summary: 'dry run: print the inventory (and Job, ConfigMap) a Provisioning would produce',
    load: async () => (await import('./commands/render.js')).renderCommand,
  },
  {
    name: 'control-plane',
    summary: 'run a real kube-apiserver + etcd with the CRDs installed, until Ctrl-C',
    load: async () => (await import('./commands/control-plane.js')).controlPlaneCommand,
  },
  {
    name: 'cluster',
    summary: 'the one-machine cluster: control plane, controllers and a node running pods, until Ctrl-C',
    load: async () => (await import('./commands/cluster.js')).clusterCommand,
  },
  {
    name: 'dev',
    summary: 'the embedded stack: broker, sources, functions, live view (Ctrl-C stops)',
    load: async () => (await import('./commands/dev.js')).devCommand,
  },
  {
    name: 'send',
    summary: 'post a CloudEvent by hand to a broker or function and print the response',
    load: async () => (await import('./commands/send.js')).sendCommand,
  },
  {
    name: 'leases',
    summary: 'publish a DHCP lease file into the ConfigMap host-lookup reads (the sidecar, by hand)',
    load: async () => (await import('./commands/leases.js')).leasesCommand,
  },
  {
    name: 'demo',
    summary: 'the embedded stack plus a simulated lab, end to end (npm start)',
    load: async () => (await import('./commands/demo.js')).demoCommand,
  },
];

export function topLevelUsage(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: bpa <command> [options]',
    '',
    'Turn Provisioning and Software resources into KUD clusters, as Knative functions.',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'bpa <command> --help' for a command's options.",
    '',
  ].join('\n');
}

/** Runs the CLI; never throws, resolves to the exit code. */
export async function main(argv: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    io.stderr(topLevelUsage());
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout(topLevelUsage());
    return 0;
  }
  const entry = commands.find((c) => c.name === name);
  if (!entry) {
    io.stderr(`bpa: unknown command '${name}'\n\n${topLevelUsage()}`);
    return 2;
  }
  try {
    const command = await entry.load();
    if (rest.includes('--help') || rest.includes('-h')) {
      io.stdout(command.usage);
      return 0;
    }
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`bpa ${name}: ${error.message}\n`);
      return 2;
    }
    io.stderr(`bpa ${name}: ${describeError(error).message}\n`);
    return 1;
  }
}

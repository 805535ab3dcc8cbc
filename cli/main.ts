import type { CliCommand, CliIO } from './command.js';
import { UsageError } from './command.js';
import { renderCommand } from './commands/render.js';
import { controlPlaneCommand } from './commands/control-plane.js';
import { devCommand } from './commands/dev.js';
import { sendCommand } from './commands/send.js';
import { demoCommand } from './commands/demo.js';
import { clusterCommand } from './commands/cluster.js';
import { describeError } from '../shared/errors.js';

export const commands: CliCommand[] = [
  renderCommand,
  controlPlaneCommand,
  clusterCommand,
  devCommand,
  sendCommand,
  demoCommand,
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
  const command = commands.find((c) => c.name === name);
  if (!command) {
    io.stderr(`bpa: unknown command '${name}'\n\n${topLevelUsage()}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout(command.usage);
    return 0;
  }
  try {
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

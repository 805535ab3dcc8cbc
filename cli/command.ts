/** One `bpa` subcommand. Each lives in cli/commands/<name>.ts and is listed in cli/main.ts. */
export interface CliCommand {
  name: string;
  /** Full `bpa <name> --help` text. */
  usage: string;
  /** Runs the command; resolves to the process exit code. */
  run(argv: string[], io: CliIO): Promise<number>;
}

/**
 * A command as `bpa --help` lists it. Its module (and everything that module imports: the stack,
 * client-node, OpenTelemetry) is loaded only when that command runs, so the CLI starts about as
 * fast as bare `node` (bench/cli.ts).
 */
export interface CliCommandEntry {
  name: string;
  /** One line for `bpa --help`. */
  summary: string;
  load: () => Promise<CliCommand>;
}

/** Where a command writes; tests pass buffers. */
export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** Thrown for bad flags or unreadable/invalid input files: exit 2, message on stderr. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

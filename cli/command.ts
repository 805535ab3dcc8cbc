/** One `bpa` subcommand. Each lives in cli/commands/<name>.ts. */
export interface CliCommand {
  name: string;
  /** One line for `bpa --help`. */
  summary: string;
  /** Full `bpa <name> --help` text. */
  usage: string;
  /** Runs the command; resolves to the process exit code. */
  run(argv: string[], io: CliIO): Promise<number>;
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

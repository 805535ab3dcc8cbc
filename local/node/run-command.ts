import { execFile, execFileSync } from 'node:child_process';

/** Runs a command (no shell) and resolves with its stdout; rejects with its stderr in the message. */
export function runCommand(
  command: string,
  args: string[],
  options: { input?: string } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { encoding: 'utf8', timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')}: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** The same, synchronously: for clean-up in exit handlers. Never throws. */
export function runCommandSync(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    });
  } catch {
    return '';
  }
}

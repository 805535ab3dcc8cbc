import type { Client as SshClient, ClientChannel, ConnectConfig } from 'ssh2';
import { z } from 'zod';
import { hostKeyAlgorithmsForPolicy, hostKeyPolicySchema, verifyHostKey } from './host-key-policy.js';
import type { HostKeyDecision } from './host-key-policy.js';
import { LineTail } from './tail.js';

/**
 * ssh2 is loaded by the first session, not at start: only an install needs it, and it costs a
 * quarter of a second and several MiB of every cold start (bench/functions.ts).
 */
let ssh2Client: Promise<typeof SshClient> | undefined;
const loadSshClient = () => (ssh2Client ??= import('ssh2').then((ssh2) => ssh2.default.Client));

export const sshSessionOptionsSchema = z.object({
  host: z.string().min(1),
  port: z.number().int().min(1).max(65535),
  username: z.string().min(1),
  /** OpenSSH or PEM private key text. Never logged, never put in a result. */
  privateKey: z.union([z.string().min(1), z.instanceof(Buffer)]),
  hostKeyPolicy: hostKeyPolicySchema,
  /** TCP connect + SSH handshake + authentication. */
  connectTimeoutMs: z.number().int().positive(),
  /** From the exec request until the exit status. */
  commandTimeoutMs: z.number().int().positive(),
  /** Lines kept from the end of stdout and of stderr. */
  tailLines: z.number().int().positive().default(20),
});
export type SshSessionOptions = z.input<typeof sshSessionOptionsSchema>;

export const sshErrorReasonSchema = z.enum([
  'InvalidSessionOptions',
  'HostKeyUnknown',
  'HostKeyChanged',
  'HostKeyRevoked',
  'ConnectFailed',
  'ConnectTimeout',
  'AuthenticationFailed',
  'SshProtocolError',
  'ExecFailed',
  'CommandTimeout',
  'CommandFailed',
  'CommandKilled',
  'SessionClosed',
  // ssh/detached.ts: the installer stopped polling (Software deleted, pod stopping); the install runs on.
  'PollingStopped',
]);
export type SshErrorReason = z.infer<typeof sshErrorReasonSchema>;

export const sshCommandResultSchema = z.object({
  /** The remote exit code; null when none arrived (no connection, timeout, killed). */
  exitCode: z.number().int().nullable(),
  /** Set when the remote command was ended by a signal. */
  signal: z.string().optional(),
  /** Absent exactly when the command ran and exited 0. */
  error: z.object({ reason: sshErrorReasonSchema, message: z.string() }).optional(),
  stdoutTail: z.array(z.string()),
  stderrTail: z.array(z.string()),
  durationMs: z.number().nonnegative(),
  /** From the start to the session being ready (TCP, handshake, authentication), when it got there. */
  connectDurationMs: z.number().nonnegative().optional(),
  /** SHA256 fingerprint of the key the host presented, when the handshake got that far. */
  hostKeyFingerprint: z.string().optional(),
  /** True when trust-on-first-use accepted a key with nothing recorded: the caller records it. */
  hostKeyFirstUse: z.boolean().optional(),
});
export type SshCommandResult = z.infer<typeof sshCommandResultSchema>;

const seconds = (ms: number) => `${Math.round(ms / 100) / 10}s`;

/**
 * Connects, runs one command, waits for its exit status and disconnects. Never throws for
 * anything that can go wrong with a host (refused, unreachable, wrong key, timeouts, failure):
 * the result says what happened, with a specific reason and message.
 */
export async function runSshCommand(options: SshSessionOptions, command: string): Promise<SshCommandResult> {
  const Client = await loadSshClient();
  const started = performance.now();
  const parsed = sshSessionOptionsSchema.safeParse(options);
  if (!parsed.success) {
    return {
      exitCode: null,
      error: {
        reason: 'InvalidSessionOptions',
        message: `Invalid SSH session options: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      },
      stdoutTail: [],
      stderrTail: [],
      durationMs: performance.now() - started,
    };
  }
  const opts = parsed.data;
  const where = `${opts.host}:${opts.port}`;
  const stdout = new LineTail(opts.tailLines);
  const stderr = new LineTail(opts.tailLines);

  return new Promise((resolve) => {
    const client = new Client();
    let decision: HostKeyDecision | undefined;
    let channel: ClientChannel | undefined;
    let commandTimer: NodeJS.Timeout | undefined;
    let settled = false;
    let connectDurationMs: number | undefined;

    const finish = (outcome: Pick<SshCommandResult, 'exitCode' | 'signal' | 'error'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(commandTimer);
      channel?.removeAllListeners();
      client.removeAllListeners();
      // Swallow late socket errors after we are done with this client.
      client.on('error', () => undefined);
      client.end();
      client.destroy();
      resolve({
        ...outcome,
        stdoutTail: stdout.snapshot(),
        stderrTail: stderr.snapshot(),
        durationMs: performance.now() - started,
        ...(connectDurationMs !== undefined ? { connectDurationMs } : {}),
        ...(decision ? { hostKeyFingerprint: decision.fingerprint } : {}),
        ...(decision?.accepted && decision.firstUse ? { hostKeyFirstUse: true } : {}),
      });
    };
    const fail = (reason: SshErrorReason, message: string, exitCode: number | null = null) =>
      finish({ exitCode, error: { reason, message } });

    client.on('error', (error: Error & { level?: string; code?: string }) => {
      if (decision && !decision.accepted) return fail(decision.reason, decision.message);
      if (error.level === 'client-timeout') {
        return fail(
          'ConnectTimeout',
          `Timed out after ${seconds(opts.connectTimeoutMs)} connecting to ${where} (TCP connect, SSH handshake and authentication)`,
        );
      }
      if (error.level === 'client-authentication') {
        return fail(
          'AuthenticationFailed',
          `SSH authentication failed for ${opts.username}@${where}: the server did not accept the key`,
        );
      }
      if (error.level === 'client-socket' || error.code !== undefined) {
        const why = error.code === 'ECONNREFUSED' ? 'connection refused' : error.message;
        return fail('ConnectFailed', `Cannot connect to ${where}: ${why}`);
      }
      return fail('SshProtocolError', `SSH error with ${where}: ${error.message}`);
    });
    client.on('close', () => {
      if (decision && !decision.accepted) return fail(decision.reason, decision.message);
      fail('SessionClosed', `The SSH connection to ${where} closed before the command finished`);
    });

    client.on('ready', () => {
      connectDurationMs = performance.now() - started;
      client.exec(command, (error, stream) => {
        if (error)
          return fail('ExecFailed', `The server at ${where} refused to run the command: ${error.message}`);
        channel = stream;
        commandTimer = setTimeout(() => {
          // Ask the server to kill it (OpenSSH honours signal requests), then drop the session.
          try {
            stream.signal('KILL');
          } catch {
            // The channel may already be closing.
          }
          fail(
            'CommandTimeout',
            `The command did not finish within ${seconds(opts.commandTimeoutMs)} on ${where}; the session was closed`,
          );
        }, opts.commandTimeoutMs);
        let exitCode: number | null = null;
        let exitSignal: string | undefined;
        stream.on('data', (chunk: Buffer) => stdout.push(chunk));
        stream.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
        stream.on('exit', (code: number | null, signal?: string) => {
          exitCode = typeof code === 'number' ? code : null;
          exitSignal = signal ?? undefined;
        });
        stream.on('close', () => {
          if (exitCode === 0) return finish({ exitCode: 0 });
          if (exitCode !== null) {
            const last = stderr.snapshot().at(-1);
            return fail(
              'CommandFailed',
              `The command exited with code ${exitCode} on ${where}${last ? `: ${last}` : ''}`,
              exitCode,
            );
          }
          if (exitSignal !== undefined) {
            return finish({
              exitCode: null,
              signal: exitSignal,
              error: {
                reason: 'CommandKilled',
                message: `The command was killed by signal ${exitSignal} on ${where}`,
              },
            });
          }
          return fail('SessionClosed', `The session on ${where} closed without an exit status`);
        });
      });
    });

    const serverHostKey = hostKeyAlgorithmsForPolicy(opts.hostKeyPolicy, opts.host, opts.port);
    const config: ConnectConfig = {
      host: opts.host,
      port: opts.port,
      username: opts.username,
      privateKey: opts.privateKey,
      readyTimeout: opts.connectTimeoutMs,
      hostVerifier: (key: Buffer) => {
        decision = verifyHostKey(opts.hostKeyPolicy, opts.host, opts.port, key);
        return decision.accepted;
      },
      ...(serverHostKey ? { algorithms: { serverHostKey: serverHostKey as never } } : {}),
    };
    try {
      client.connect(config);
    } catch (error) {
      // ssh2 throws synchronously for an unparsable private key.
      fail('AuthenticationFailed', `Cannot use the SSH private key: ${(error as Error).message}`);
    }
  });
}

/**
 * SIMULATED lab SSH hosts for `bpa demo`: one in-process ssh2 `Server` per host address
 * 127.0.0.N, all on one port, each with its own ed25519 host key. They accept one client
 * public key, record every command and answer with plausible but fake apt output: nothing is
 * ever executed or installed. Every log line and every reply says so.
 *
 * Only the no-root fallback (`bpa demo --no-node`) uses it. With the node the demo's hosts are
 * real OpenSSH sshd daemons (local/lab/openssh-hosts.ts), and so are the tests' hosts.
 */
import { timingSafeEqual } from 'node:crypto';
import ssh2 from 'ssh2';
import { generateEd25519KeyPair } from './ssh-keys.js';
import type { AuthContext, Connection, ParsedKey, Server as SshServer } from 'ssh2';
import type { Logger } from '../../shared/log.js';
import { silentLogger } from '../../shared/log.js';
import { freePortOnAll } from '../control-plane/free-port.js';
import { sha256Fingerprint } from '../../functions/software-install/ssh/known-hosts.js';
import { startedNotice, statusPrefix } from '../../functions/software-install/ssh/detached.js';

const { Server, utils } = ssh2;

export type SimulatedBehaviour =
  | { kind: 'succeed' }
  /** Print `stderr` and exit with `exitCode`, as a failing apt-get would. */
  | { kind: 'fail'; exitCode: number; stderr: string };

export interface LabSshCommand {
  ip: string;
  username: string;
  command: string;
  /** ISO time it was received. */
  at: string;
}

export interface SimulatedSshHost {
  ip: string;
  hostKeyFingerprint: string;
  /** `[ip]:port ssh-ed25519 AAAA...` */
  knownHostsLine: string;
}

export interface LabSshServers {
  port: number;
  hosts: SimulatedSshHost[];
  /** known_hosts text pinning every simulated host's key. */
  knownHosts: string;
  /** Every command received, in arrival order. */
  commands(): LabSshCommand[];
  setBehaviour(ip: string, behaviour: SimulatedBehaviour): void;
  stop(): Promise<void>;
}

export interface LabSshOptions {
  hosts: readonly { ip: string }[];
  /** OpenSSH public key line (`ssh-ed25519 AAAA... comment`) the hosts accept, for any user. */
  authorizedPublicKey: string;
  /** Default: a port free on every host address. */
  port?: number;
  behaviours?: Record<string, SimulatedBehaviour>;
  logger?: Logger;
}

export async function startLabSshServers(options: LabSshOptions): Promise<LabSshServers> {
  const logger = (options.logger ?? silentLogger).child({ component: 'simulated-ssh-lab' });
  const authorized = parsePublicKey(options.authorizedPublicKey);
  const behaviours = new Map(Object.entries(options.behaviours ?? {}));
  const commands: LabSshCommand[] = [];
  const ips = options.hosts.map((h) => h.ip);

  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePortOnAll(ips));
    const hostKeys = ips.map(() => generateEd25519KeyPair('bpa simulated lab host'));
    const servers: SshServer[] = [];
    try {
      for (const [index, ip] of ips.entries()) {
        const hostKey = hostKeys[index]!;
        const server = new Server({ hostKeys: [hostKey.private] }, (client) =>
          serveClient(client, ip, authorized, behaviours, commands, logger),
        );
        servers.push(server);
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, ip, () => {
            server.off('error', reject);
            resolve();
          });
        });
      }
    } catch (error) {
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE' && options.port === undefined && attempt < 5)
        continue;
      throw error;
    }

    const hosts = ips.map((ip, index) => {
      const [type, base64] = hostKeys[index]!.public.split(' ') as [string, string];
      return {
        ip,
        hostKeyFingerprint: sha256Fingerprint(Buffer.from(base64, 'base64')),
        knownHostsLine: `[${ip}]:${port} ${type} ${base64}`,
      };
    });
    logger.info('simulated SSH hosts listening (ssh2 in this process; commands are recorded, never run)', {
      port,
      hosts: hosts.map((h) => ({ ip: h.ip, hostKeyFingerprint: h.hostKeyFingerprint })),
    });
    return {
      port,
      hosts,
      knownHosts: hosts.map((h) => h.knownHostsLine).join('\n') + '\n',
      commands: () => [...commands],
      setBehaviour: (ip, behaviour) => void behaviours.set(ip, behaviour),
      stop: async () => {
        await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
        logger.info('simulated SSH hosts stopped', { port });
      },
    };
  }
}

function serveClient(
  client: Connection,
  ip: string,
  authorized: ParsedKey,
  behaviours: Map<string, SimulatedBehaviour>,
  commands: LabSshCommand[],
  logger: Logger,
): void {
  let username = '';
  client.on('error', (error) => logger.debug('simulated SSH client error', { ip, message: error.message }));
  client.on('authentication', (ctx: AuthContext) => {
    username = ctx.username;
    if (ctx.method !== 'publickey' || !sameKey(ctx.key.algo, ctx.key.data, authorized))
      return ctx.reject(['publickey']);
    // Without a signature the client is only asking whether the key would do.
    if (ctx.signature && authorized.verify(ctx.blob!, ctx.signature, ctx.hashAlgo) !== true)
      return ctx.reject(['publickey']);
    ctx.accept();
  });
  client.on('ready', () => {
    client.on('session', (acceptSession) => {
      const session = acceptSession();
      session.on('exec', (acceptExec, _reject, info) => {
        const stream = acceptExec();
        // The installer's detached protocol (ssh/detached.ts): the start is answered at once, a
        // poll with the outcome of the last start; polls are not recorded (one install, one command).
        if (info.command.includes(statusPrefix)) {
          const behaviour = behaviours.get(ip) ?? { kind: 'succeed' };
          const started = [...commands].reverse().find((c) => c.ip === ip)?.command ?? '';
          if (behaviour.kind === 'fail') {
            stream.stderr.write(`${behaviour.stderr}\n`);
            stream.write(`${statusPrefix}exit ${behaviour.exitCode}\n`);
          } else stream.write(`${fakeAptOutput(ip, started)}${statusPrefix}exit 0\n`);
          stream.exit(0);
          stream.end();
          return;
        }
        commands.push({ ip, username, command: info.command, at: new Date().toISOString() });
        if (info.command.includes(startedNotice)) {
          logger.info('simulated SSH host received an install (recorded, not run)', {
            ip,
            username,
            command: info.command,
          });
          stream.write(`${startedNotice} (simulated)\n`);
          stream.exit(0);
          stream.end();
          return;
        }
        const behaviour = behaviours.get(ip) ?? { kind: 'succeed' };
        logger.info('simulated SSH host received a command (recorded, not run)', {
          ip,
          username,
          command: info.command,
          answer: behaviour.kind,
        });
        if (behaviour.kind === 'fail') {
          stream.stderr.write(`${behaviour.stderr}\n`);
          stream.exit(behaviour.exitCode);
        } else {
          stream.write(fakeAptOutput(ip, info.command));
          stream.exit(0);
        }
        stream.end();
      });
    });
  });
}

/** What apt-get would roughly print, clearly marked as simulated. */
export function fakeAptOutput(ip: string, command: string): string {
  const words = [...command.matchAll(/'([a-z0-9][a-z0-9+.-]*(?:=[A-Za-z0-9.+~:-]+)?)'/g)]
    .map((m) => m[1]!)
    // The detached install's id (ssh/detached.ts) is a quoted word too.
    .filter((word) => !/^[0-9a-f]{24}$/.test(word));
  return [
    `[simulated host ${ip}: nothing is installed, this is the bpa demo lab]`,
    'Reading package lists... Done',
    'Building dependency tree... Done',
    'Reading state information... Done',
    ...words.map((word) => {
      const [name, version] = word.split('=') as [string, string | undefined];
      return `Setting up ${name} (${version ?? 'latest'}) ... (simulated)`;
    }),
    '',
  ].join('\n');
}

function parsePublicKey(line: string): ParsedKey {
  const parsed = utils.parseKey(line);
  if (parsed instanceof Error)
    throw new Error(`simulated SSH lab: cannot parse the client public key: ${parsed.message}`);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key) throw new Error('simulated SSH lab: no client public key');
  return key;
}

function sameKey(algo: string, data: Buffer, authorized: ParsedKey): boolean {
  const expected = authorized.getPublicSSH();
  return algo === authorized.type && data.length === expected.length && timingSafeEqual(data, expected);
}

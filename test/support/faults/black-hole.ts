/** A TCP listener that accepts connections and never says a word (a host hung before the SSH banner). */
import { spawn } from 'node:child_process';
import net from 'node:net';

export interface BlackHole {
  host: string;
  port: number;
  /** Connections accepted so far. */
  accepted(): number;
  close(): Promise<void>;
}

export async function startBlackHole(host: string, port = 0): Promise<BlackHole> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, resolve);
  });
  const address = server.address() as net.AddressInfo;
  return {
    host,
    port: address.port,
    accepted: () => accepted,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The same listener in another network namespace (a lab host's, test/support/node-lab-hosts.ts,
 * which the node's pods reach): a child process there, since a socket cannot change namespace.
 */
export async function startBlackHoleIn(netns: string, host: string, port: number): Promise<BlackHole> {
  const script =
    "const s=new Set();require('net').createServer((c)=>{s.add(c);c.on('error',()=>{});" +
    "process.stdout.write('a\\n')}).listen({host:process.argv[1],port:+process.argv[2],exclusive:true}," +
    "()=>process.stdout.write('listening\\n'))";
  const child = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script, host, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let accepted = 0;
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`black hole in ${netns} exited ${code} before listening`)));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      for (const line of chunk.split('\n'))
        if (line === 'listening') resolve();
        else if (line === 'a') accepted++;
    });
  });
  child.removeAllListeners('exit');
  return {
    host,
    port,
    accepted: () => accepted,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ManagedProcess } from '../control-plane/managed-process.js';
import { startManagedProcess } from '../control-plane/managed-process.js';
import { clusterDomain } from './network.js';
import type { ServiceView } from './service-view.js';

/**
 * CoreDNS's role: Debian's dnsmasq on the gateway address answers `<svc>.<ns>.svc.cluster.local`
 * from the Services (ClusterIP, or the ready endpoints of a headless Service; a CNAME for
 * ExternalName). It has no upstream server: any other name fails, nothing is forwarded off the
 * machine. A records come from a hosts file reloaded on SIGHUP; CNAMEs are configuration, so a
 * change of them restarts dnsmasq.
 */
export const dnsmasqBinary = '/usr/sbin/dnsmasq';

export class ClusterDns {
  private process: ManagedProcess | undefined;
  private cnames = '';
  private readonly hostsFile: string;
  private readonly confFile: string;
  private stopped = false;

  constructor(
    private readonly listenAddress: string,
    private readonly workDir: string,
    private readonly log: (message: string, fields?: Record<string, unknown>) => void,
  ) {
    this.hostsFile = join(workDir, 'dns-hosts');
    this.confFile = join(workDir, 'dns-cnames.conf');
  }

  start(): void {
    writeFileSync(this.hostsFile, '');
    writeFileSync(this.confFile, '');
    this.launch();
  }

  update(views: ServiceView[]): void {
    if (this.stopped) return;
    const hosts: string[] = [];
    const cnames: string[] = [];
    for (const view of views) {
      const name = `${view.name}.${view.namespace}.svc.${clusterDomain}`;
      if (view.type === 'ExternalName' && view.externalName)
        cnames.push(`cname=${name},${view.externalName}`);
      else if (view.clusterIP) hosts.push(`${view.clusterIP}\t${name}`);
      else for (const address of view.readyAddresses) hosts.push(`${address}\t${name}`);
    }
    const next = `${this.hostsFile}.next`;
    writeFileSync(next, hosts.sort().join('\n') + '\n');
    renameSync(next, this.hostsFile);
    const cnameText = cnames.sort().join('\n') + '\n';
    if (cnameText !== this.cnames) {
      this.cnames = cnameText;
      writeFileSync(this.confFile, cnameText);
      void this.restart();
    } else if (this.process && !this.process.exit()) {
      process.kill(this.process.pid, 'SIGHUP');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.process?.stop(2000);
  }

  private launch(): void {
    this.process = startManagedProcess(
      'dnsmasq',
      dnsmasqBinary,
      [
        '--keep-in-foreground',
        '--conf-file=' + this.confFile,
        '--no-resolv',
        '--no-hosts',
        '--no-poll',
        '--bind-interfaces',
        `--listen-address=${this.listenAddress}`,
        '--port=53',
        `--addn-hosts=${this.hostsFile}`,
        `--local=/${clusterDomain}/`,
        '--user=root',
        '--pid-file',
        '--log-facility=-',
      ],
      join(this.workDir, 'dnsmasq.log'),
    );
    const current = this.process;
    void current.exited.then((exit) => {
      if (!this.stopped && this.process === current) {
        this.log('dnsmasq exited; restarting', {
          code: exit.code,
          signal: exit.signal,
          log: current.logTail(5),
        });
        setTimeout(() => !this.stopped && this.launch(), 1000).unref();
      }
    });
  }

  private async restart(): Promise<void> {
    const previous = this.process;
    this.process = undefined;
    await previous?.stop(2000);
    if (!this.stopped) this.launch();
  }
}

export const dnsAvailable = () => existsSync(dnsmasqBinary);

/**
 * Metal3's real baremetal-operator (BMO) against the run's control plane, for the tests of
 * contract section 13. The binary is built from the Go module proxy by `engines/build.sh bmo`
 * (BMO_VERSION in engines/versions.env; cached, nothing committed) and runs with its fixture
 * provisioner (`-test-mode`: no Ironic; it registers, inspects (two fixed NICs: ab:cd:12:34:56:78
 * with 192.168.100.1, 12:34:56:78:ab:cd with 192.168.100.2) and provisions a host in seconds),
 * no webhook, no metrics, no leader election, watching one namespace.
 *
 * BMO watches more kinds than BareMetalHost (HardwareData, HostFirmwareSettings,
 * HostFirmwareComponents, FirmwareSchema, BMCEventSubscription, PreprovisioningImage, DataImage):
 * their CRDs are installed from the module's own config/base/crds/bases in the Go module cache.
 * The BareMetalHost CRD stays the one the run installed (METAL3_CRDS_DIR): other files share it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { pinnedVersion } from '../../local/control-plane/assets.js';
import { installCrds } from '../../local/control-plane/crds.js';
import { repoRoot } from '../../local/control-plane/repo-root.js';

const module = 'github.com/metal3-io/baremetal-operator';
const goEnv = { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' };

/** The BMO binary: built once per version into ~/.cache/bpa-functions (minutes the first time). */
function bmoBinary(): string {
  const dir = execFileSync('bash', [join(repoRoot(), 'engines', 'build.sh'), 'bmo'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
    .trim()
    .split('\n')
    .at(-1);
  return join(dir ?? '', 'bmo');
}

/** BMO's own CRDs (but BareMetalHost's), from the module in the Go module cache. */
function bmoCrdFiles(): string[] {
  const version = pinnedVersion('BMO_VERSION');
  const info = JSON.parse(
    execFileSync('go', ['mod', 'download', '-json', `${module}@${version}`], {
      encoding: 'utf8',
      env: goEnv,
    }),
  ) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${module}@${version}: ${info.Error ?? 'no directory'}`);
  const dir = join(info.Dir, 'config', 'base', 'crds', 'bases');
  return readdirSync(dir)
    .filter((name) => name.endsWith('.yaml') && name !== 'metal3.io_baremetalhosts.yaml')
    .sort()
    .map((name) => join(dir, name));
}

export interface Metal3 {
  /** The last lines BMO wrote (its JSON log), for a failing assertion's message. */
  logTail(): string;
  stop(): Promise<void>;
}

/** Installs BMO's CRDs and starts BMO on `namespace`; stop() ends it (SIGTERM, then SIGKILL). */
export async function startMetal3(
  kubeConfig: KubeConfig,
  kubeconfigPath: string,
  namespace: string,
): Promise<Metal3> {
  const binary = bmoBinary();
  await installCrds(kubeConfig, bmoCrdFiles());
  const child: ChildProcess = spawn(
    binary,
    [
      '-test-mode',
      '-namespace',
      namespace,
      '-kubeconfig',
      kubeconfigPath,
      '-webhook-port',
      '0',
      '-metrics-addr',
      '0',
      '-health-addr',
      '127.0.0.1:0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    if (lines.length > 200) lines.splice(0, lines.length - 200);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = once(child, 'exit');
  return {
    logTail: () => lines.slice(-20).join('\n'),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

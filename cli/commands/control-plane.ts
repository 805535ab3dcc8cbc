import { resolve } from 'node:path';
import type { ControlPlane } from '../../local/control-plane/index.js';
import { projectCrds, startControlPlane } from '../../local/control-plane/index.js';
import type { CliCommand, CliIO } from '../command.js';
import { parseFlags } from '../flags.js';
import { untilStopped } from '../until-stopped.js';

const usage = `Usage: bpa control-plane [--kubeconfig-out FILE]

Start a real etcd + kube-apiserver on 127.0.0.1 with the project's CRDs installed, print how to
reach it, and run until Ctrl-C (SIGINT) or SIGTERM, then stop both processes and remove their
temporary files.

Installed CRDs: Provisioning, Software and Image (manifests/crds/); BareMetalHost from
$METAL3_CRDS_DIR/metal3.io_baremetalhosts.yaml, else the project's minimal one; every Knative
CRD in $KNATIVE_CRDS_DIR when it is set.

Binaries: $KUBEBUILDER_ASSETS, or $TEST_ASSET_KUBE_APISERVER + $TEST_ASSET_ETCD, else the
per-version cache filled by engines/build.sh (built from Go modules on first use).

Options:
  --kubeconfig-out FILE  also write the admin kubeconfig to FILE (kept after exit)
  -h, --help             show this help

Exit status: 0 stopped on a signal; 1 the control plane failed to start or died; 2 bad options.
`;

function parseOptions(argv: string[]): { kubeconfigOut?: string } {
  const values = parseFlags(argv, { 'kubeconfig-out': { type: 'string' } });
  return { kubeconfigOut: values['kubeconfig-out'] ? resolve(values['kubeconfig-out']) : undefined };
}

function describe(controlPlane: ControlPlane, notes: string[]): string {
  const { etcdReadyMs, apiserverReadyMs, crdsReadyMs } = controlPlane.timings;
  return [
    `kube-apiserver  ${controlPlane.server}`,
    `kubeconfig      ${controlPlane.kubeconfigPath}`,
    `etcd            ${controlPlane.etcdUrl}`,
    `binaries        ${controlPlane.assetsDir} (${controlPlane.binaries.source})`,
    `logs            ${controlPlane.processes.kubeApiserver.logPath}, ${controlPlane.processes.etcd.logPath}`,
    `ready in        etcd ${etcdReadyMs} ms, kube-apiserver ${apiserverReadyMs} ms, CRDs ${crdsReadyMs ?? 0} ms`,
    'CRDs:',
    ...notes.map((note) => `  ${note}`),
    '',
    `Try: kubectl --kubeconfig ${controlPlane.kubeconfigPath} get bpa -A`,
    'Ctrl-C stops it.',
    '',
  ].join('\n');
}

async function run(argv: string[], io: CliIO): Promise<number> {
  const options = parseOptions(argv);
  const crds = projectCrds();
  io.stderr('Starting etcd and kube-apiserver...\n');
  const controlPlane = await startControlPlane({
    crds: crds.inputs,
    kubeconfigPath: options.kubeconfigOut,
    // Our own handlers below stop it and then return an exit code.
    handleSignals: false,
    log: (line) => io.stderr(`  ${line}\n`),
  });
  io.stdout(describe(controlPlane, crds.notes));
  const outcome = await untilStopped(controlPlane.exited);
  io.stderr(outcome.died ? `${outcome.died}: stopping\n` : `${outcome.signal}: stopping\n`);
  await controlPlane.stop();
  io.stderr('Stopped.\n');
  return outcome.died ? 1 : 0;
}

export const controlPlaneCommand: CliCommand = {
  name: 'control-plane',
  usage,
  run,
};

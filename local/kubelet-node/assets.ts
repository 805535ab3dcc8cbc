/**
 * The real node's binaries: containerd, its runc v2 shim and ctr (engines/build.sh containerd),
 * kubelet and kube-proxy (engines/build.sh node), pause (local/images/inputs.ts pauseBinary: the one
 * build of Kubernetes' pause.c, which the project's `pause` image carries too), CoreDNS
 * (engines/build.sh coredns), and Debian's runc, CNI plugins, nft, unshare and nsenter. Each
 * answers from its per-version cache in milliseconds once built.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BpaError } from '../../shared/errors.js';
import { repoRoot } from '../control-plane/repo-root.js';
import { pauseBinary } from '../images/inputs.js';

const run = promisify(execFile);

export interface NodeBinaries {
  containerd: string;
  shim: string;
  ctr: string;
  kubelet: string;
  kubeProxy: string;
  /** The sandbox image's only file (Kubernetes' pause.c, gcc -static). */
  pause: string;
  runc: string;
  /** Directory of the CNI plugins (bridge, host-local, loopback, portmap). */
  cniDir: string;
  /** CoreDNS (engines/build.sh coredns), the node's cluster DNS. */
  coredns: string;
  /** Directory holding containerd-shim-runc-v2: containerd finds its shim on PATH. */
  containerdDir: string;
}

/** Debian files the node runs, and the package that brings each (scripts/prereqs.sh installs them). */
const debianFiles: Array<[string, string]> = [
  ['/usr/sbin/runc', 'runc'],
  ['/usr/lib/cni/bridge', 'containernetworking-plugins'],
  ['/usr/sbin/nft', 'nftables'],
  ['/usr/bin/unshare', 'util-linux'],
  ['/usr/bin/nsenter', 'util-linux'],
  ['/usr/sbin/ip', 'iproute2'],
];

async function buildSet(set: string): Promise<string> {
  try {
    const { stdout } = await run('bash', [join(repoRoot(), 'engines', 'build.sh'), set], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const dir = stdout.trim().split('\n').pop() ?? '';
    if (!dir) throw new Error('build.sh printed no directory');
    return dir;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    throw new BpaError(
      'NodeStartFailed',
      `engines/build.sh ${set} failed: ${stderr.slice(-3000)}`,
      'internal',
    );
  }
}

/** Locates (building once, minutes the first time) every binary of the real node. */
export async function locateNodeBinaries(): Promise<NodeBinaries> {
  const missing = debianFiles.filter(([file]) => !existsSync(file)).map(([, pkg]) => pkg);
  if (missing.length > 0) {
    throw new BpaError(
      'NodeStartFailed',
      `the real node needs Debian packages ${[...new Set(missing)].join(', ')} (bash scripts/prereqs.sh test installs them)`,
      'internal',
    );
  }
  const [containerdDir, nodeDir, corednsDir] = [
    await buildSet('containerd'),
    await buildSet('node'),
    await buildSet('coredns'),
  ];
  return {
    containerd: join(containerdDir, 'containerd'),
    shim: join(containerdDir, 'containerd-shim-runc-v2'),
    ctr: join(containerdDir, 'ctr'),
    kubelet: join(nodeDir, 'kubelet'),
    kubeProxy: join(nodeDir, 'kube-proxy'),
    pause: join(pauseBinary(repoRoot()).dir, 'pause'),
    coredns: join(corednsDir, 'coredns'),
    runc: '/usr/sbin/runc',
    cniDir: '/usr/lib/cni',
    containerdDir,
  };
}

import type { CliIO } from '../command.js';
import { parseFlags } from '../flags.js';
import { untilStopped } from '../until-stopped.js';
import { describeStackCluster, nodeUnavailableReason, startStackCluster } from '../../local/stack/cluster.js';
import { join } from 'node:path';
import { repoRoot } from '../../local/control-plane/repo-root.js';
import { applyNodeFunctions } from '../../local/stack/node-functions.js';
import { describeError } from '../../shared/errors.js';

const usage = `Usage: bpa cluster [--kubeconfig-out FILE] [--functions]

Runs the whole one-machine Kubernetes cluster until Ctrl-C (SIGINT) or SIGTERM:
  etcd, kube-apiserver, kube-controller-manager and kube-scheduler (real, built from the pinned
  Kubernetes modules), plus a real node (local/kubelet-node/, docs/node.md): containerd,
  the kubelet, kube-proxy and CoreDNS in a network and mount namespace of their own, pods on a
  CNI bridge with no route off this machine. Every image of the project (the functions, the
  install, publisher, cleanup and KUD stand-in Jobs, the test images) is built first when the
  cache (~/.cache/bpa-functions/images) does not hold it, as \`npm run images\` does, and imported:
  a pod names it as manifests/components/images-local does (localhost/bpa-functions/<image>@<digest>)
  and nothing is pulled. Deployments, Jobs, EndpointSlices, garbage collection and namespace
  deletion are Kubernetes' own; \`kubectl logs\` and \`kubectl exec\` work.

Needs root (namespaces, cgroups, mounts); without it, it says why and exits 1 (\`bpa
control-plane\`, or \`bpa dev --no-node\`, runs the control plane alone).

Options:
  --kubeconfig-out FILE  also write the admin kubeconfig to FILE (kept after exit)
  --functions            also run the functions of manifests/ as pods from their images (the
                         images-local Component, then the local Serving overlay of
                         docs/knative.md: Deployments with the manifests' securityContext, probes
                         and limits; no Knative, so no events reach them); prints each one's
                         scheduled -> Ready time
  -h, --help             show this help

Exit status: 0 stopped on a signal; 1 the cluster could not start or a process died; 2 bad options.
`;

function parseOptions(argv: string[]): { kubeconfigOut?: string; functions: boolean } {
  const values = parseFlags(argv, {
    'kubeconfig-out': { type: 'string' },
    functions: { type: 'boolean' },
  });
  return {
    ...(values['kubeconfig-out'] ? { kubeconfigOut: values['kubeconfig-out'] } : {}),
    functions: values.functions === true,
  };
}

async function run(argv: string[], io: CliIO): Promise<number> {
  const { functions, ...options } = parseOptions(argv);
  io.stderr('Starting the one-machine cluster (images, control plane, controllers, real node)...\n');
  let cluster;
  try {
    cluster = await startStackCluster({
      ...options,
      fallBack: false,
      log: (line) => io.stderr(`  ${line}\n`),
    });
  } catch (error) {
    const { reason, message } = describeError(error);
    if (reason !== nodeUnavailableReason) throw error;
    io.stderr(`bpa cluster: ${message} (bpa control-plane runs the control plane alone)\n`);
    return 1;
  }
  const functionLines: string[] = [];
  if (functions) {
    io.stderr('  applying the functions of manifests/ from their images...\n');
    const applied = await applyNodeFunctions(cluster.kubeConfig, join(repoRoot(), 'manifests')).catch(
      async (error: unknown) => {
        await cluster.stop();
        throw error;
      },
    );
    for (const f of applied) {
      const waiting = f.pod?.status?.containerStatuses?.[0]?.state?.waiting;
      functionLines.push(
        `function ${f.namespace}/${f.name}`.padEnd(36) +
          (f.scheduledToReadyMs !== undefined
            ? ` Ready, scheduled -> Ready ${f.scheduledToReadyMs} ms`
            : ` not Ready${waiting?.reason ? ` (${waiting.reason}: ${waiting.message ?? ''})` : ''}`),
      );
    }
  }
  io.stdout(
    [
      `bpa cluster: ready in ${(cluster.readyMs / 1000).toFixed(1)} s`,
      ...[...describeStackCluster(cluster), ...functionLines].map((line) => `  ${line}`),
      '',
      `Try: kubectl --kubeconfig ${cluster.kubeconfigPath} get nodes,pods -A -o wide`,
      `     kubectl --kubeconfig ${cluster.kubeconfigPath} run hi --rm -i --restart=Never --image-pull-policy=Never \\`,
      `       --image=${cluster.images?.references.cleanup ?? 'localhost/bpa-functions/cleanup'} -- echo hi`,
      ...(functions
        ? []
        : ['     bpa cluster --functions: also the functions of manifests/ from these images']),
      'Ctrl-C stops it.',
      '',
    ].join('\n'),
  );
  const outcome = await untilStopped(cluster.exited);
  io.stderr(outcome.died ? `${outcome.died}: stopping\n` : `${outcome.signal}: stopping\n`);
  await cluster.stop();
  io.stderr('Stopped.\n');
  return outcome.died ? 1 : 0;
}

/** Untyped: it satisfies both the listed-command and the lazily loaded-command shapes of cli/command.ts. */
export const clusterCommand = {
  name: 'cluster',
  summary:
    'the one-machine cluster: control plane, controllers and a real node running the project images, until Ctrl-C',
  usage,
  run,
};

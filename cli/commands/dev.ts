import type { CliCommand, CliIO } from '../command.js';
import { UsageError } from '../command.js';
import { engineFlag, parseFlags, portFlag } from '../flags.js';
import { startLocalImageService, type LocalImageService } from '../../local/image-service.js';
import { startStack, type Stack, type StackOptions } from '../../local/stack/index.js';
import { describeStackCluster, startStackCluster, type StackCluster } from '../../local/stack/cluster.js';
import { stackBanner } from '../../local/stack/banner.js';
import { formatDeliveryLine } from '../../local/stack/delivery-line.js';
import { startLiveView } from '../../local/live-view/server.js';
import { createLogger } from '../../shared/log.js';
import { KubeConfig } from '@kubernetes/client-node';
import { resolve } from 'node:path';
import { followLeasesFile } from '../../local/knative/leases-configmap.js';
import { startKnativeStack } from '../../local/knative/stack.js';

const usage = `Usage: bpa dev [--kubeconfig FILE | --no-node] [--kubeconfig-out FILE] [--port N] [--leases FILE] [--replay] [--images]
       bpa dev --engine knative [--kubeconfig-out FILE] [--port N] [--leases FILE]
       bpa dev --live-view-only [--kubeconfig FILE] [--host ADDR] [--port N]

Runs the functions on this machine, driven by the same Broker, Triggers, ApiServerSources and
PingSource as on a cluster (read from manifests/): an embedded Knative broker, the local
sources, the four functions each on its own port, and a live view in the browser.

With --engine knative the events go through real Knative Eventing instead: built from its Go
modules (engines/build.sh knative; minutes the first time), installed from its own config/ on
the one-machine cluster's real node (kubelet + containerd), with manifests/ applied as
\`kubectl apply -k\` would (its Knative Services as Deployments: Serving cannot run here;
docs/knative.md). Knative's components and the functions run as pods of the node, from their
images (npm run images' own code; --leases is copied into a ConfigMap host-lookup reads).
Needs root (the node) and kubectl (kustomize).

Options:
  --engine E             embedded (default) or knative
  --kubeconfig FILE      use this cluster's API (default: $KUBECONFIG when set, else start the
                         one-machine cluster of \`bpa cluster\`: etcd, kube-apiserver,
                         kube-controller-manager, kube-scheduler and the real node
                         (containerd, kubelet, kube-proxy) with the project's images and
                         CRDs; the KUD Job really runs, from the kud-stand-in image)
  --no-node              start the control plane alone (etcd + kube-apiserver): nothing runs
                         Jobs or pods. Also what happens, said in one line, without root or
                         network namespaces
  --kubeconfig-out FILE  where the embedded cluster's kubeconfig is written
                         (default: a temporary file, printed at start)
  --port N               broker port, or the first free port from N (default 8080);
                         the live view takes the next free port
  --leases FILE          ISC dhcpd or dnsmasq lease file for host-lookup (LEASES_SOURCE)
  --replay               announce objects that already exist (Knative's source never does)
  --images               also start the image service (docs/images.md): a local S3 server
                         (versitygw; built once by engines/build.sh s3), uploads (tus and the
                         BPA REST agent's routes), image-verify and downloads; prints the URLs
  --live-view-only       serve only the live view, for a real cluster: resources from the
                         kubeconfig's API, events POSTed by the cluster's broker to
                         <live view>/api/cloudevents (a Trigger with an empty filter; see
                         local/live-view/README.md)
  --host ADDR            bind address (default 127.0.0.1; the live-view-only mode may need
                         an address the cluster can reach)
  -h, --help             this text

Prints one line per event delivery (type, subject, trigger, status, latency). Ctrl-C stops
everything and removes the temporary files.

Try it:
  kubectl --kubeconfig <printed path> apply -f my-provisioning.yaml
  kubectl --kubeconfig <printed path> get provisionings -A -w
`;

type DevOptions = Omit<StackOptions, 'log'> & {
  liveViewOnly: boolean;
  node: boolean;
  images: boolean;
  engine: 'embedded' | 'knative';
};

function parseOptions(argv: string[]): DevOptions {
  const values = parseFlags(argv, {
    kubeconfig: { type: 'string' },
    'kubeconfig-out': { type: 'string' },
    port: { type: 'string' },
    leases: { type: 'string' },
    replay: { type: 'boolean' },
    'live-view-only': { type: 'boolean' },
    host: { type: 'string' },
    'no-node': { type: 'boolean' },
    images: { type: 'boolean' },
    engine: { type: 'string' },
  });
  const port = portFlag(values.port);
  const kubeconfig = values.kubeconfig ?? (process.env.KUBECONFIG || undefined);
  if (kubeconfig && values['kubeconfig-out'])
    throw new UsageError(
      '--kubeconfig-out is for the embedded control plane; it cannot be used with a kubeconfig',
    );
  if (values.kubeconfig && values['no-node'])
    throw new UsageError('--no-node is for the embedded cluster; it cannot be used with --kubeconfig');
  const engine = engineFlag(values.engine);
  if (engine === 'knative') {
    const refused = (
      [
        ['--kubeconfig', values.kubeconfig],
        ['--no-node', values['no-node']],
        ['--replay', values.replay],
        ['--images', values.images],
        ['--live-view-only', values['live-view-only']],
        ['--host', values.host],
      ] as const
    ).find(([, value]) => value !== undefined && value !== false);
    if (refused)
      throw new UsageError(
        `${refused[0]} cannot be used with --engine knative (it runs Knative on the embedded one-machine cluster's node${refused[0] === '--replay' ? "; Knative's ApiServerSource never replays" : ''})`,
      );
  }
  return {
    engine,
    ...(kubeconfig && engine === 'embedded' ? { kubeconfig } : {}),
    ...(values['kubeconfig-out'] ? { kubeconfigOut: values['kubeconfig-out'] } : {}),
    ...(port ? { port } : {}),
    ...(values.leases ? { leases: values.leases } : {}),
    replay: values.replay ?? false,
    ...(values.host ? { host: values.host } : {}),
    liveViewOnly: values['live-view-only'] ?? false,
    node: !values['no-node'],
    images: values.images ?? false,
  };
}

/** The live view alone, against a cluster: its API for resources, its broker for events. */
async function runLiveViewOnly(
  options: DevOptions,
  io: CliIO,
  stopped: Promise<NodeJS.Signals>,
): Promise<number> {
  if (!options.kubeconfig) throw new UsageError('--live-view-only needs --kubeconfig FILE (or KUBECONFIG)');
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(options.kubeconfig);
  const host = options.host ?? '127.0.0.1';
  const liveView = await startLiveView({
    host,
    port: options.port ?? 8080,
    portSpan: 100,
    kubeConfig,
    log: createLogger({ level: 'warn', sink: (line) => io.stderr(`${line}\n`) }),
  });
  io.stdout(
    `bpa dev: live view only, resources from ${kubeConfig.getCurrentCluster()?.server ?? options.kubeconfig}\n` +
      `  live view         ${liveView.url}\n` +
      `  CloudEvent sink   ${liveView.cloudEventsUrl}   (subscriber of a Trigger with an empty filter)\n` +
      'Ctrl-C stops\n',
  );
  await stopped;
  await liveView.stop();
  return 0;
}

/**
 * The chain on real Knative Eventing on the one-machine cluster, with the live view on the
 * node's gateway address (where the pods reach it) fed by a Trigger with an empty filter.
 */
async function runOnKnative(
  options: DevOptions,
  io: CliIO,
  stopped: Promise<NodeJS.Signals>,
): Promise<number> {
  const say = (line: string) => io.stdout(`${line}\n`);
  let cluster: StackCluster | undefined;
  let liveView: Awaited<ReturnType<typeof startLiveView>> | undefined;
  let stopLeases: (() => void) | undefined;
  const stopAll = async () => {
    stopLeases?.();
    await liveView?.stop().catch(() => undefined);
    await cluster?.stop();
  };
  const starting = (async () => {
    say('bpa dev: starting the one-machine cluster (engine: knative)');
    // The real node: Knative's components and the functions run from their images.
    cluster = await startStackCluster({
      node: true,
      fallBack: false,
      ...(options.kubeconfigOut ? { kubeconfigOut: options.kubeconfigOut } : {}),
    });
    for (const line of describeStackCluster(cluster)) say(`  ${line}`);
    const node = cluster.kubeletNode!;
    // The machine's end of the node's veth: the pods reach it, nothing off the machine does.
    liveView = await startLiveView({
      host: node.addresses.hostIp,
      port: options.port ?? 8080,
      portSpan: 100,
      kubeConfig: cluster.kubeConfig,
      log: createLogger({ level: 'warn', sink: (line) => io.stderr(`${line}\n`) }),
    });
    // A pod reads no file of this machine: the lease file goes to a ConfigMap host-lookup reads.
    const leases = options.leases
      ? await followLeasesFile(
          cluster.kubeConfig,
          resolve(options.leases),
          { namespace: 'default', name: 'bpa-dhcp-leases', key: 'leases' },
          say,
        )
      : undefined;
    stopLeases = leases?.stop;
    const knative = await startKnativeStack({
      kubeConfig: cluster.kubeConfig,
      node,
      log: say,
      ...(leases ? { config: { LEASES_SOURCE: leases.leasesSource } } : {}),
      extraObjects: [liveViewTrigger(liveView.cloudEventsUrl)],
    });
    return knative;
  })();
  const knative = await Promise.race([starting, stopped.then(() => undefined)]);
  if (!knative) {
    await starting.then(stopAll, () => stopAll()).catch(() => undefined);
    return 130;
  }
  for (const note of knative.notes) say(`  serving overlay: ${note}`);
  const rows: [string, string][] = [
    [
      'engine',
      `Knative Eventing ${knative.install.version} (real: built from its Go modules, its own config/)`,
    ],
    ['broker', `${knative.ingressBase}/bpa-system/default`],
    ['functions', 'pods in bpa-system (kubectl get pods -n bpa-system)'],
    ['live view', liveView!.url],
    ['kubeconfig', cluster!.kubeconfigPath],
    [
      'check',
      `kubectl --kubeconfig ${cluster!.kubeconfigPath} get brokers,triggers,apiserversources,pingsources -A`,
    ],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  io.stdout(rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`).join('\n') + '\n');
  say(`ready: apply resources with kubectl --kubeconfig ${cluster!.kubeconfigPath}; Ctrl-C stops`);
  const signal = await stopped;
  say(`bpa dev: ${signal}, stopping…`);
  await stopAll();
  say('bpa dev: stopped');
  return 0;
}

/** The live view's Trigger: every event of the manifests' Broker, to the live view's sink. */
function liveViewTrigger(uri: string) {
  return {
    apiVersion: 'eventing.knative.dev/v1',
    kind: 'Trigger',
    metadata: { name: 'bpa-live-view', namespace: 'bpa-system' },
    spec: { broker: 'default', subscriber: { uri } },
  };
}

/** Resolves on the first SIGINT or SIGTERM; a second one ends the process at once. */
function untilStopSignal(io: CliIO): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      const force = () => {
        io.stderr('bpa dev: stopping now\n');
        process.exit(130);
      };
      process.once('SIGINT', force);
      process.once('SIGTERM', force);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

export const devCommand: CliCommand = {
  name: 'dev',
  usage,
  run: async (argv, io) => {
    const options = parseOptions(argv);
    const stopped = untilStopSignal(io);
    if (options.liveViewOnly) return runLiveViewOnly(options, io, stopped);
    if (options.engine === 'knative') return runOnKnative(options, io, stopped);
    const say = (line: string) => io.stdout(`${line}\n`);
    const { node, kubeconfigOut, images: withImages, ...stackOptions } = options;
    let images: LocalImageService | undefined;
    let cluster: StackCluster | undefined;
    const starting = (async () => {
      if (!stackOptions.kubeconfig) {
        say(node ? 'bpa dev: starting the one-machine cluster' : 'bpa dev: starting the control plane');
        // The real node (local/kubelet-node) with the project's images; without root, the
        // control plane alone (fallback, as --no-node).
        cluster = await startStackCluster({
          node,
          ...(kubeconfigOut ? { kubeconfigOut } : {}),
          log: (line) => say(`  ${line}`),
        });
        if (cluster.fallback) io.stderr(`bpa dev: ${cluster.fallback}; running as with --no-node\n`);
        for (const line of describeStackCluster(cluster)) say(`  ${line}`);
      }
      say('bpa dev: starting the embedded stack');
      return startStack({
        ...stackOptions,
        // On its own cluster the functions act as their ServiceAccounts of manifests/, as on a
        // cluster; with --kubeconfig, with that kubeconfig's rights (nothing is applied there).
        ...(cluster ? { kubeconfig: cluster.kubeconfigPath, serviceAccounts: { config: {} } } : {}),
        // The Jobs' images (KUD, cleanup, publisher, install) as the real node holds them.
        ...(cluster ? { functionsEnv: cluster.functionsEnv } : {}),
        log: say,
        onDelivery: (record) => say(formatDeliveryLine(record)),
      });
    })();
    const stopAll = async (stack?: Stack) => {
      await images?.stop().catch(() => undefined);
      await stack?.stop().catch(() => undefined);
      await cluster?.stop();
    };
    const stack = await Promise.race([starting, stopped.then(() => undefined)]);
    if (!stack) {
      // Stopped while starting: let the start finish, then take it all down again.
      await starting.then(stopAll, () => stopAll()).catch(() => undefined);
      return 130;
    }
    io.stdout(stackBanner(stack));
    if (withImages) {
      say('bpa dev: starting the image service');
      try {
        images = await startLocalImageService({
          kubeConfig: stack.kubeConfig,
          forwardTo: stack.ingressUrl,
          ...(stackOptions.host ? { host: stackOptions.host } : {}),
          log: createLogger({ level: 'warn', sink: (line) => io.stderr(`${line}\n`) }),
        });
      } catch (error) {
        await stopAll(stack);
        throw error;
      }
      say(
        `  upload (tus)      ${images.uploadUrl}   (Authorization: Bearer <token>; metadata owner, cluster, type, name)`,
      );
      say(`  REST agent routes ${images.legacyUrl}/<owner>/<cluster>/{binary,container,os}_images`);
      say(`  downloads         ${images.downloadUrl}/<namespace>/<Image name>`);
      say(`  S3 store          ${images.store.endpoint} bucket ${images.store.bucket}`);
    }
    say(`ready: apply resources with kubectl --kubeconfig ${stack.kubeconfigPath}; Ctrl-C stops`);
    const signal = await stopped;
    say(`bpa dev: ${signal}, stopping…`);
    await stopAll(stack);
    say('bpa dev: stopped');
    return 0;
  },
};

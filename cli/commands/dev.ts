import { parseArgs } from 'node:util';
import type { CliCommand, CliIO } from '../command.js';
import { UsageError } from '../command.js';
import { startLocalImageService, type LocalImageService } from '../../local/image-service.js';
import { startStack, type Stack, type StackOptions } from '../../local/stack.js';
import { describeStackCluster, startStackCluster, type StackCluster } from '../../local/stack/cluster.js';
import { stackBanner } from '../../local/stack/banner.js';
import { formatDeliveryLine } from '../../local/stack/delivery-line.js';
import { firstFreePort } from '../../local/stack/free-port.js';
import { startLiveView } from '../../local/live-view/server.js';
import { createLogger } from '../../shared/log.js';
import { KubeConfig } from '@kubernetes/client-node';
import { describeError } from '../../shared/errors.js';

const usage = `Usage: bpa dev [--kubeconfig FILE | --no-node] [--kubeconfig-out FILE] [--port N] [--leases FILE] [--replay] [--images]
       bpa dev --live-view-only [--kubeconfig FILE] [--host ADDR] [--port N]

Runs the functions on this machine, driven by the same Broker, Triggers, ApiServerSources and
PingSource as on a cluster (read from manifests/): an embedded Knative broker, the local
sources, the four functions each on its own port, and a live view in the browser.

Options:
  --kubeconfig FILE      use this cluster's API (default: $KUBECONFIG when set, else start the
                         one-machine cluster of \`bpa cluster\`: etcd, kube-apiserver,
                         kube-controller-manager, kube-scheduler and the node, with the
                         project's CRDs; the KUD Job really runs, as a local process)
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

type DevOptions = Omit<StackOptions, 'log'> & { liveViewOnly: boolean; node: boolean; images: boolean };

function parseOptions(argv: string[]): DevOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      allowPositionals: false,
      strict: true,
      options: {
        kubeconfig: { type: 'string' },
        'kubeconfig-out': { type: 'string' },
        port: { type: 'string' },
        leases: { type: 'string' },
        replay: { type: 'boolean' },
        'live-view-only': { type: 'boolean' },
        host: { type: 'string' },
        'no-node': { type: 'boolean' },
        images: { type: 'boolean' },
      },
    }));
  } catch (error) {
    throw new UsageError(describeError(error).message);
  }
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new UsageError(`--port must be a port number (1-65535), not ${JSON.stringify(values.port)}`);
  }
  const kubeconfig = values.kubeconfig ?? (process.env.KUBECONFIG || undefined);
  if (kubeconfig && values['kubeconfig-out'])
    throw new UsageError(
      '--kubeconfig-out is for the embedded control plane; it cannot be used with a kubeconfig',
    );
  if (values.kubeconfig && values['no-node'])
    throw new UsageError('--no-node is for the embedded cluster; it cannot be used with --kubeconfig');
  return {
    ...(kubeconfig ? { kubeconfig } : {}),
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
    port: await firstFreePort(host, options.port ?? 8080),
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
    const say = (line: string) => io.stdout(`${line}\n`);
    const { node, kubeconfigOut, images: withImages, ...stackOptions } = options;
    let images: LocalImageService | undefined;
    let cluster: StackCluster | undefined;
    const starting = (async () => {
      if (!stackOptions.kubeconfig) {
        say(node ? 'bpa dev: starting the one-machine cluster' : 'bpa dev: starting the control plane');
        cluster = await startStackCluster({ node, ...(kubeconfigOut ? { kubeconfigOut } : {}) });
        if (cluster.fallback) io.stderr(`bpa dev: ${cluster.fallback}; running as with --no-node\n`);
        for (const line of describeStackCluster(cluster)) say(`  ${line}`);
      }
      say('bpa dev: starting the embedded stack');
      return startStack({
        ...stackOptions,
        ...(cluster ? { kubeconfig: cluster.kubeconfigPath } : {}),
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

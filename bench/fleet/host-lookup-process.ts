// host-lookup in a process of its own, for the fleet bench (bench/fleet-scale.ts): the real
// function server and definition, with the counting client, so its requests, bytes read and
// peak RSS are its own. Asked over IPC: 'counters' → {requests, bytesRead, peakRssBytes}; 'stop'.
import { readFileSync } from 'node:fs';
import { definition } from '../../functions/host-lookup/index.js';
import { silentLogger } from '../../shared/log.js';
import { startFunctionServer } from '../../shared/server/function-server.js';
import { CountingKubeConfig } from './counting-kube-config.js';

const kubeConfig = new CountingKubeConfig();
kubeConfig.loadFromFile(process.env.BENCH_KUBECONFIG ?? '');
const server = await startFunctionServer({
  definition,
  host: '127.0.0.1',
  port: 0,
  kubeConfig,
  env: process.env,
  log: silentLogger,
  tracing: false,
  processMetrics: false,
});

/** VmHWM: the peak resident set of this process (Linux /proc). */
const peakRssBytes = () =>
  Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? NaN) * 1024;

process.on('message', (message) => {
  if (message === 'counters')
    process.send?.({
      counters: {
        requests: kubeConfig.requests,
        bytesRead: kubeConfig.bytesRead(),
        peakRssBytes: peakRssBytes(),
        rssBytes: process.memoryUsage().rss,
        byResource: Object.fromEntries(kubeConfig.byResource),
      },
    });
  if (message === 'stop') void server.close().then(() => process.exit(0));
});
process.send?.({ url: server.url });

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNamespace } from '../local/control-plane/namespaces.js';
import { freeLoopbackPort } from '../local/control-plane/free-port.js';
import { applyLabBareMetalHosts } from '../local/lab/bare-metal-hosts.js';
import { labHosts } from '../local/lab/lab-definition.js';
import { renderIscLeaseFile } from '../local/lab/lease-file.js';
import { startStack } from '../local/stack/index.js';
import { measureApplyToJob } from './apply-to-job.js';

/**
 * Embedded stack figure: time from `kubectl apply` of a Provisioning (3 nodes) to its KUD Job
 * existing, i.e. source event → host-lookup → inventory-render → kud-job-launch, each through
 * the broker, plus kubectl's own start. Median of 10 Provisionings applied one after another.
 */
const runs = 10;
const namespace = 'bench-stack';

export const stackBench = {
  name: 'embedded stack: kubectl apply of a Provisioning → KUD Job exists',
  run: async (print: (line: string) => void) => {
    const dir = mkdtempSync(join(tmpdir(), 'bpa-bench-stack-'));
    const leases = join(dir, 'dhcpd.leases');
    writeFileSync(leases, renderIscLeaseFile(labHosts.filter((h) => h.inLeaseFile)));
    const stack = await startStack({
      port: await freeLoopbackPort(),
      leases,
      log: () => undefined,
      logFile: join(dir, 'stack.log'),
      logLevel: 'warn',
      functionsEnv: { BMH_NAMESPACE: namespace },
    });
    try {
      await createNamespace(stack.kubeConfig, namespace);
      await applyLabBareMetalHosts(stack.kubeConfig, labHosts, namespace);
      const figures = await measureApplyToJob({
        kubeConfig: stack.kubeConfig,
        kubeconfigPath: stack.kubeconfigPath,
        namespace,
        runs,
        prefix: 'bench',
      });
      print(`runs: ${runs} (3-node Provisioning each, applied one after another)`);
      print(`median: ${figures.medianMs.toFixed(0)} ms`);
      print(`min / max: ${figures.minMs.toFixed(0)} / ${figures.maxMs.toFixed(0)} ms`);
    } finally {
      await stack.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

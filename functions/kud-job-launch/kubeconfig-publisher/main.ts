// The kubeconfig publisher's entry point (dist/bundle/kubeconfig-publisher.mjs, in the functions'
// image): run by the Job kud-job-launch creates on the KUD pod's node; see publish.ts.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { describeError } from '../../../shared/errors.js';
import { createLogger } from '../../../shared/log.js';
import { publishInputSchema, publishKubeconfig } from './publish.js';

const usage = `Usage: kubeconfig-publisher --file <admin.conf> --secret <name>

Copies KUD's admin.conf into the Secret <name> (key value) of this pod's namespace
(POD_NAMESPACE, else the service account's namespace), with the pod's service account.
The file's content goes to the API server only, never to the log.`;

const serviceAccountNamespace = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
const log = createLogger({ base: { component: 'kubeconfig-publisher' } });

try {
  const { values } = parseArgs({
    options: { file: { type: 'string' }, secret: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const input = publishInputSchema.safeParse({
    file: values.file,
    secret: values.secret,
    namespace: process.env.POD_NAMESPACE || readFileSync(serviceAccountNamespace, 'utf8').trim(),
  });
  if (!input.success) {
    console.error(usage);
    log.error('invalid arguments', {
      reason: 'InvalidArguments',
      issues: input.error.issues.map((i) => i.path.join('.')),
    });
    process.exit(2);
  }
  // The pod's own service account only: never a kubeconfig found in the image or on the node.
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromCluster();
  const { bytes } = await publishKubeconfig(kubeConfig.makeApiClient(CoreV1Api), input.data);
  log.info('kubeconfig published', { secret: `${input.data.namespace}/${input.data.secret}`, bytes });
} catch (error) {
  const { reason, message } = describeError(error);
  log.error('kubeconfig not published', { reason, message });
  process.exit(1);
}

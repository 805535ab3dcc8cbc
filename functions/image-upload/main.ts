// Container entry point: the image service on HOST:PORT (uploads, downloads or both: IMAGE_SERVICE_ROLES).
import { KubeConfig } from '@kubernetes/client-node';
import { describeError } from '../../shared/errors.js';
import { createLogger } from '../../shared/log.js';
import { functionName, startImageService } from './index.js';

const log = createLogger();
const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();
try {
  const service = await startImageService({ kubeConfig, log });
  const stop = (signal: NodeJS.Signals) => {
    log.info('signal received, shutting down', { function: functionName, signal });
    service.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} catch (error) {
  log.error('image service failed to start', { function: functionName, ...describeError(error) });
  process.exit(1);
}

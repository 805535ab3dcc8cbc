import { BpaError } from '../../shared/errors.js';

/**
 * Why a container cannot start yet: the kubelet's waiting reasons. The worker shows the reason and
 * message in the container's status and tries again a little later (the object may appear).
 */
export const containerConfigError = (message: string) =>
  new BpaError('CreateContainerConfigError', message, 'transient');

export const mountError = (message: string) => new BpaError('FailedMount', message, 'transient');

import { z } from 'zod';
import { envInt, envString } from '../../shared/config.js';
import {
  defaultActiveDeadlineSeconds,
  defaultKudImage,
  defaultSshKeySecret,
} from '../../shared/core/kud-job.js';

/** kud-job-launch's env (docs/architecture.md, Config). */
export const kudJobLaunchConfigSchema = z.object({
  KUD_IMAGE: envString(defaultKudImage),
  KUD_ACTIVE_DEADLINE_SECONDS: envInt(defaultActiveDeadlineSeconds, { min: 1 }),
  /** Secret with id_rsa / id_rsa.pub mounted into the KUD pod. */
  SSH_KEY_SECRET: envString(defaultSshKeySecret),
});
export type KudJobLaunchConfig = z.infer<typeof kudJobLaunchConfigSchema>;

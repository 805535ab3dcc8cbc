import { z } from 'zod';
import { envInt, envList, envString } from '../../shared/config.js';
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
  /** Namespaces the sweep looks at (comma-separated); empty: all namespaces. */
  SWEEP_NAMESPACES: envList<string>([]),
});
export type KudJobLaunchConfig = z.infer<typeof kudJobLaunchConfigSchema>;

import { counterSpec, histogramSpec } from '../../shared/telemetry/metrics.js';

export const jobsLaunched = counterSpec({
  name: 'bpa_jobs_launched_total',
  help: 'KUD installer Jobs launched, by outcome (created, replaced)',
  labelNames: ['outcome'],
});

export const jobsFinished = counterSpec({
  name: 'bpa_jobs_finished_total',
  help: 'KUD installer Jobs seen finished, by outcome (succeeded, failed)',
  labelNames: ['outcome'],
});

/** From the Job's startTime to its completionTime (or last condition for a failed Job). */
export const kudRunDuration = histogramSpec({
  name: 'bpa_kud_run_duration_seconds',
  help: 'Duration of KUD installer Job runs, from Job status',
  labelNames: ['outcome'],
  buckets: [10, 30, 60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200],
});

export const timeToReady = histogramSpec({
  name: 'bpa_time_to_ready_seconds',
  help: 'From a Provisioning creationTimestamp to its Ready condition',
  labelNames: [],
  buckets: [1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 5400, 7200, 10800],
});

export const kudJobLaunchMetrics = [jobsLaunched, jobsFinished, kudRunDuration, timeToReady];

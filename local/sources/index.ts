export {
  startApiServerSources,
  makeApiServerEvent,
  apiServerSubject,
  type RunningApiServerSources,
  type SourceEmission,
  type StartApiServerSourcesOptions,
} from './apiserver-source.js';
export {
  startPingSources,
  makePingEvent,
  pingEventType,
  pingSourceUri,
  type RunningPingSources,
  type PingEmission,
} from './ping-source.js';
export { parseCron, cronMatches } from './cron.js';
export { guessPlural } from './plural.js';

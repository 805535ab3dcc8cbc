export {
  startBroker,
  nextTtl,
  defaultBrokerTtl,
  type RunningBroker,
  type StartBrokerOptions,
} from './broker.js';
export type { DeliveryRecord, DeliveryOutcome, BrokerEvents } from './delivery-record.js';
export {
  loadBrokerConfig,
  resolveDestination,
  type RefResolver,
  type ResolvedBroker,
} from './load-config.js';
export type { KReference } from './knative-objects.js';
export { parseIsoDuration } from './duration.js';

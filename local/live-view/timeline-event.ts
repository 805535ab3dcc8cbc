import { z } from 'zod';

/**
 * One CloudEvent delivery as the live view shows it: which event went where, with what
 * outcome. `trigger` is the Trigger name for broker deliveries, `ingress` for an event
 * entering the broker, or `subscriber` when the live view itself received it from a
 * cluster's broker.
 */
export const timelineEventSchema = z.object({
  seq: z.number().int().nonnegative(),
  at: z.string(),
  id: z.string(),
  type: z.string(),
  source: z.string().optional(),
  subject: z.string().optional(),
  trigger: z.string(),
  subscriber: z.string().optional(),
  /** HTTP status of the delivery, or a short word (`error`, `dead-letter`). */
  status: z.union([z.number().int(), z.string()]),
  latencyMs: z.number().nonnegative().optional(),
  attempt: z.number().int().positive().optional(),
  /** delivered, retry, dead-lettered, dropped (broker deliveries) or received (subscriber). */
  outcome: z.string().optional(),
  /** Why the attempt failed, when it did. */
  reason: z.string().optional(),
});
export type TimelineEvent = z.infer<typeof timelineEventSchema>;

/**
 * The CloudEvent itself (every attribute and extension, and the data), kept apart from the
 * timeline and fetched when someone clicks an entry: many deliveries share one event.
 */
export interface StoredCloudEvent {
  attributes: Record<string, unknown>;
  data?: unknown;
}

/** A timeline entry before the hub numbers it. */
export type TimelineEventInput = Omit<TimelineEvent, 'seq' | 'at'> & { at?: string };

import { CloudEvent } from 'cloudevents';
import type { z } from 'zod';
import { BpaError } from '../errors.js';
import { chainEventDataSchemas, eventSource, type ChainEventType } from '../events/types.js';

export interface ChainEventOptions {
  /** Cluster name: the `cluster` extension Triggers filter on. */
  cluster: string;
  /**
   * The version of the subject the sending step wrote (extension `resourceversion`): a hint the
   * receiver may only use to take that exact version from its watch instead of reading it
   * (shared/k8s/define-step.ts). Outside the data, so a reply sent again is the same reply.
   */
  resourceVersion?: string;
  /** Fixed id (tests); default a fresh UUID. */
  id?: string;
  /** Fixed time (tests); default now. */
  time?: string;
}

/** The extension attribute naming the subject's version the sender wrote (lowercase: CloudEvents). */
export const resourceVersionExtension = 'resourceversion';

/**
 * The version a chain event says its sender wrote, when it carries a plausible one; anything else
 * (absent, not a string, empty or longer than any resourceVersion) is no hint at all.
 */
export function writtenVersionOf(event: CloudEvent<unknown>): string | undefined {
  const value: unknown = event[resourceVersionExtension];
  return typeof value === 'string' && value.length > 0 && value.length <= 64 ? value : undefined;
}

/** The data a chain event type carries, as its schema accepts it. */
export type ChainEventData<T extends ChainEventType> = z.input<(typeof chainEventDataSchemas)[T]>;

/**
 * Builds one of the chain's own events (contract section 9): source `/bpa-functions/<function>`,
 * the given subject (`namespaces/<ns>/provisionings/<name>` or `.../softwares/<name>`),
 * extension `cluster`, JSON data checked against the type's schema. A data mismatch is a bug in
 * the emitting function, so it throws an `internal` BpaError instead of sending a bad event.
 */
export function chainEvent<T extends ChainEventType>(
  type: T,
  functionName: string,
  subject: string,
  data: ChainEventData<T>,
  options: ChainEventOptions,
): CloudEvent<z.output<(typeof chainEventDataSchemas)[T]>> {
  const schema = chainEventDataSchemas[type] as z.ZodType;
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const where = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || '(data)'}: ${issue.message}`)
      .join('; ');
    throw new BpaError(
      'InvalidChainEvent',
      `${functionName} built an invalid ${type} event: ${where}`,
      'internal',
    );
  }
  return new CloudEvent({
    specversion: '1.0',
    type,
    source: eventSource(functionName),
    subject,
    datacontenttype: 'application/json',
    data: parsed.data as z.output<(typeof chainEventDataSchemas)[T]>,
    cluster: options.cluster,
    ...(options.resourceVersion === undefined ? {} : { [resourceVersionExtension]: options.resourceVersion }),
    ...(options.id === undefined ? {} : { id: options.id }),
    ...(options.time === undefined ? {} : { time: options.time }),
  });
}

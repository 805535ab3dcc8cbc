import type { CloudEvent } from 'cloudevents';
import type { KubeConfig } from '@kubernetes/client-node';
import type { z } from 'zod';
import type { Logger } from '../log.js';
import type { FunctionMetrics, MetricSpec } from '../telemetry/metrics.js';
import type { OwnWrites } from '../k8s/own-writes.js';
import type { WatchedObjects, WatchSource } from '../k8s/watched-objects.js';
import type { ObjectQueue } from './object-queue.js';

/**
 * What a handler gets besides the event. Mirrors faas-js-runtime's Context (log, ...) and
 * adds the project's needs: Kubernetes access, validated config, and a way to send events
 * that are not the reply (the sweep re-drives many resources from one ping).
 */
export interface FunctionContext<Config = unknown> {
  /** The function's name, from its definition: the source of its events, the reporter of its Events. */
  functionName: string;
  /** Logger already bound to the event id/type, subject and trace id. */
  log: Logger;
  /** Kubernetes access: from KUBECONFIG / in-cluster config, or injected by tests and the local stack. */
  kubeConfig: KubeConfig;
  /** The function's config, parsed from env by its zod schema. */
  config: Config;
  /**
   * Sends an extra event to the broker (K_SINK / BROKER_URL). Only the sweep uses it;
   * normal chaining is by reply. Rejects when no sink is configured.
   */
  send(event: CloudEvent<unknown>): Promise<void>;
  /**
   * W3C traceparent the request continues: the incoming event's, if any, or the one given to
   * `continueTrace`.
   */
  traceparent?: string;
  /**
   * Moves the rest of the request into another trace: the request's span becomes a child of
   * `traceparent` (linked to the span it started in), and the reply, `send()` and every later
   * log line carry that trace id. For work that resumes something recorded earlier (a Job
   * annotated with the trace that launched it), so one trace runs from the source event to
   * the end. A malformed traceparent is ignored (returns false). Absent outside the server.
   */
  continueTrace?(traceparent: string, tracestate?: string): boolean;
  /**
   * The server's Prometheus metrics, for domain counters and histograms:
   * `context.metrics?.counter(spec).inc(labels)` (see shared/telemetry/metrics.ts). Absent when
   * a handler is called outside the server (unit tests), hence the `?.`.
   */
  metrics?: FunctionMetrics;
  /**
   * The server's per-object queue (object-queue.ts): the shared step's prologue runs the
   * deliveries of one object one at a time. Absent when a handler is called outside a server.
   */
  queue?: ObjectQueue;
  /**
   * The versions this server's steps wrote (shared/k8s/own-writes.ts): the shared step's
   * prologue drops the echoes of its own writes before any read. Absent outside a server.
   */
  ownWrites?: OwnWrites;
  /**
   * The watches of the resources the definition names in `watches` (shared/k8s/watched-objects.ts):
   * the shared step's prologue takes the object an event points at from there when the watch holds
   * it at the exact version the event shows, and reads it otherwise. Absent outside a server.
   */
  watched?: WatchedObjects;
}

/** The result of a handler: a CloudEvent (sent back as the reply, HTTP 200) or nothing (HTTP 204). */
export type HandlerResult = CloudEvent<unknown> | undefined | void;

/**
 * What a function does with one event type: the zod schema its `data` must satisfy, and the
 * handler, which gets that data already parsed (the server parses once; the event is there for
 * its attributes).
 */
export interface EventHandler<Config = unknown, Data = unknown> {
  data: z.ZodType<Data>;
  handle(context: FunctionContext<Config>, data: Data, event: CloudEvent<unknown>): Promise<HandlerResult>;
}

/** The handlers of a function by event type; `data: never` lets each entry keep its own data type. */
export type EventHandlers<Config> = Readonly<
  Record<
    string,
    {
      data: z.ZodType;
      handle(
        context: FunctionContext<Config>,
        data: never,
        event: CloudEvent<unknown>,
      ): Promise<HandlerResult>;
    }
  >
>;

/** One entry of `events`, typed from its schema: `on(schema, (context, data, event) => ...)`. */
export function on<Config, Schema extends z.ZodType>(
  data: Schema,
  handle: (
    context: FunctionContext<Config>,
    data: z.output<Schema>,
    event: CloudEvent<unknown>,
  ) => Promise<HandlerResult>,
): EventHandler<Config, z.output<Schema>> {
  return { data: data as z.ZodType<z.output<Schema>>, handle };
}

/**
 * Everything the function server needs to run one function. Each functions/<name>/index.ts
 * exports `handle` (the func convention) and `definition` (this).
 */
export interface FunctionDefinition<Config = unknown> {
  /** Function name, e.g. host-lookup. Used in logs, metrics, event source, Event reporter. */
  name: string;
  /**
   * Accepted event types, each with its data schema and handler. Anything else is answered
   * 400 (a Trigger should not have sent it), and so is data that fails its schema.
   */
  events: EventHandlers<Config>;
  /** Schema of the function's env config. */
  configSchema: z.ZodType<Config>;
  /**
   * Domain metrics the handler records, registered when the server starts so they are on
   * /metrics before the first event (shared/telemetry/metrics.ts: counterSpec, histogramSpec).
   */
  metrics?: readonly MetricSpec[];
  /**
   * Releases what the function keeps while warm for this KubeConfig (host-lookup's watch of
   * BareMetalHosts); called when its server closes.
   */
  release?: (kubeConfig: KubeConfig) => Promise<void>;
  /**
   * What the server keeps from a watch while it runs (one list and one watch each, started by the
   * first use; shared/k8s/watched-objects.ts), so that a step's event at a version the watch holds
   * costs no read, nor does a read of an object the function looks up on every event (issue 26
   * item 4). Needs `list` and `watch` on each.
   */
  watches?: (config: Config) => readonly WatchSource[];
}

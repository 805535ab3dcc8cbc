import { CloudEvent } from 'cloudevents';
import { ApiException, type KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { envInt, envString } from '../../../shared/config.js';
import { BpaError, invalid, transient } from '../../../shared/errors.js';
import { classifyApiError } from '../../../shared/k8s/api-errors.js';
import { createLogger, type Logger } from '../../../shared/log.js';
import { counterSpec } from '../../../shared/telemetry/metrics.js';
import {
  on,
  type FunctionContext,
  type FunctionDefinition,
  type HandlerResult,
} from '../../../shared/server/types.js';

/** The server must never touch Kubernetes itself: any property access on this fails the test. */
export const untouchableKubeConfig = new Proxy(
  {},
  {
    get(_target, property) {
      if (property === 'then') return undefined;
      throw new Error(`the function server touched the KubeConfig (${String(property)})`);
    },
  },
) as unknown as KubeConfig;

export const greetType = 'test.greet';
export const silentType = 'test.silent';
export const failType = 'test.fail';
export const slowType = 'test.slow';
export const badReplyType = 'test.bad-reply';
export const sendType = 'test.send';

export const greetingsCounted = counterSpec({
  name: 'test_greetings_total',
  help: 'Greetings sent by the test function',
  labelNames: ['language'],
});

export const testConfigSchema = z.object({
  GREETING: envString('hello'),
  REPEAT: envInt(1, { min: 1, max: 3 }),
});
export type TestConfig = z.infer<typeof testConfigSchema>;

/** A gate a test opens to let a slow handler finish. */
export interface Gate {
  entered: Promise<void>;
  open(): void;
}
export function createGate(): Gate & { wait(): Promise<void>; enter(): void } {
  let enter!: () => void;
  let open!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { entered, open, enter, wait: () => opened };
}

export interface TestFunctionProbe {
  /** Contexts seen by the handler, in order. */
  contexts: FunctionContext<TestConfig>[];
  events: CloudEvent<unknown>[];
  slowGate?: ReturnType<typeof createGate>;
}

/**
 * A tiny function covering every path of the server: a reply, no reply, thrown errors of
 * each kind, a slow handler, an invalid reply, and context.send().
 */
export function testFunction(probe: TestFunctionProbe): FunctionDefinition<TestConfig> {
  // Every handler records what it was given, then does its own part.
  const recorded = <Schema extends z.ZodType>(
    schema: Schema,
    body: (
      context: FunctionContext<TestConfig>,
      data: z.output<Schema>,
      event: CloudEvent<unknown>,
    ) => Promise<HandlerResult>,
  ) =>
    on<TestConfig, Schema>(schema, async (context, data, event) => {
      probe.contexts.push(context);
      probe.events.push(event);
      context.log.info('handling');
      return body(context, data, event);
    });
  return {
    name: 'test-fn',
    events: {
      [greetType]: recorded(
        z.object({ name: z.string().min(1), language: z.enum(['en', 'fr']).optional() }),
        async (context, data, event) => {
          context.metrics?.counter(greetingsCounted).inc({ language: data.language ?? 'en' });
          return new CloudEvent({
            type: 'test.greeted',
            source: '/bpa-functions/test-fn',
            subject: event.subject,
            datacontenttype: 'application/json',
            data: { greeting: `${context.config.GREETING.repeat(context.config.REPEAT)} ${data.name}` },
          });
        },
      ),
      [silentType]: recorded(z.unknown(), async () => undefined),
      [failType]: recorded(
        z.object({
          kind: z.enum(['invalid', 'transient', 'resolution', 'internal', 'plain', 'gone', 'conflict']),
        }),
        async (_context, { kind }) => {
          // Refusals of the API server as @kubernetes/client-node throws them, classified as the functions do.
          if (kind === 'gone' || kind === 'conflict')
            throw classifyApiError(
              new ApiException(
                kind === 'gone' ? 404 : 409,
                'refused',
                JSON.stringify({
                  kind: 'Status',
                  message: kind === 'gone' ? 'namespaces "gone" not found' : 'the object has been modified',
                }),
                {},
              ),
              'write the inventory ConfigMap',
            );
          if (kind === 'invalid') throw invalid('BadInput', 'the input is wrong');
          if (kind === 'transient') throw transient('ApiUnavailable', 'the API server is down');
          if (kind === 'resolution') throw new BpaError('HostNotFound', 'Host with MAC Address x not found');
          if (kind === 'internal') throw new BpaError('Bug', 'unexpected state', 'internal');
          throw new Error('plain failure');
        },
      ),
      [slowType]: recorded(z.unknown(), async () => {
        probe.slowGate?.enter();
        await probe.slowGate?.wait();
        return undefined;
      }),
      [badReplyType]: recorded(z.unknown(), async () => ({ not: 'a CloudEvent' }) as unknown as CloudEvent),
      [sendType]: recorded(z.object({ count: z.number().int().min(1) }), async (context, { count }) => {
        for (let index = 0; index < count; index += 1) {
          await context.send(
            new CloudEvent({ type: 'test.sent', source: '/bpa-functions/test-fn', data: { index } }),
          );
        }
        return undefined;
      }),
    },
    configSchema: testConfigSchema,
    metrics: [greetingsCounted],
  };
}

/** A logger that keeps every line, parsed. */
export function capturingLogger(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'debug', sink: (line) => lines.push(JSON.parse(line)) });
  return { log, lines };
}

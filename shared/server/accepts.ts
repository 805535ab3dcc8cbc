import type { CloudEvent } from 'cloudevents';
import type { FunctionContext, FunctionDefinition, HandlerResult } from './types.js';

/** The part of a function definition that says what it accepts. */
type Accepting<Config> = Pick<FunctionDefinition<Config>, 'name' | 'events'>;

/** Why an event cannot be handled: the reason and message of the 400 answer. */
export interface EventProblem {
  reason: string;
  message: string;
}

/** The event types a function accepts. */
export const acceptedTypes = (definition: Pick<FunctionDefinition<never>, 'events'>) =>
  Object.keys(definition.events);

/** The event's type is not one the function accepts (a Trigger should not have sent it). */
export function unacceptedType<Config>(
  definition: Accepting<Config>,
  type: string,
): EventProblem | undefined {
  if (Object.hasOwn(definition.events, type)) return undefined;
  return {
    reason: 'UnacceptedEventType',
    message: `${definition.name} does not accept events of type ${type} (accepted: ${acceptedTypes(definition).join(', ')})`,
  };
}

/** An accepted event with its data parsed: call `run` to handle it. */
export interface RoutedEvent<Config> {
  run(context: FunctionContext<Config>): Promise<HandlerResult>;
}

/**
 * Finds the handler of the event's type and parses the data with its schema, once: the
 * handler gets the parsed data. A type the function does not accept, or data that fails the
 * schema (the message names the first fields that do), is a problem answered 400.
 */
export function routeEvent<Config>(
  definition: Accepting<Config>,
  event: CloudEvent<unknown>,
): { problem: EventProblem } | { routed: RoutedEvent<Config> } {
  const unaccepted = unacceptedType(definition, event.type);
  if (unaccepted) return { problem: unaccepted };
  const handler = definition.events[event.type]!;
  const data = handler.data.safeParse(event.data);
  if (!data.success) {
    const where = data.error.issues
      .slice(0, 5)
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(data)'}: ${issue.message}`)
      .join('; ');
    return {
      problem: {
        reason: 'InvalidEventData',
        message: `The data of ${event.type} does not match its schema: ${where}`,
      },
    };
  }
  return { routed: { run: (context) => handler.handle(context, data.data as never, event) } };
}

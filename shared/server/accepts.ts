import type { CloudEvent } from 'cloudevents';
import type { FunctionDefinition } from './types.js';

/** The part of a function definition that says what it accepts. */
type Accepting = Pick<FunctionDefinition, 'name' | 'accepts'>;

/** Why an event cannot be handled: the reason and message of the 400 answer. */
export interface EventProblem {
  reason: string;
  message: string;
}

/** The event's type is not one the function accepts (a Trigger should not have sent it). */
export function unacceptedType(definition: Accepting, type: string): EventProblem | undefined {
  if (definition.accepts[type]) return undefined;
  return {
    reason: 'UnacceptedEventType',
    message: `${definition.name} does not accept events of type ${type} (accepted: ${Object.keys(definition.accepts).join(', ')})`,
  };
}

/** The event's data fails its type's schema; the message names the first fields that do. */
export function invalidData(definition: Accepting, event: CloudEvent<unknown>): EventProblem | undefined {
  const schema = definition.accepts[event.type];
  if (!schema) return unacceptedType(definition, event.type);
  const data = schema.safeParse(event.data);
  if (data.success) return undefined;
  const where = data.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(data)'}: ${issue.message}`)
    .join('; ');
  return {
    reason: 'InvalidEventData',
    message: `The data of ${event.type} does not match its schema: ${where}`,
  };
}

/**
 * Flag parsing shared by the `bpa` commands, so that a bad flag reads the same in every command:
 * strict `node:util` parseArgs (an unknown flag or a missing value is an error, never ignored)
 * and the checks of the flags several commands take (--port, --engine).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { describeError } from '../shared/errors.js';
import { UsageError } from './command.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** The flags of `argv` (no positionals, unknown flags refused): a UsageError (exit 2) otherwise. */
export function parseFlags<const O extends Options>(argv: string[], options: O, usage?: string) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    const message = describeError(error).message;
    throw new UsageError(usage === undefined ? message : `${message}\n\n${usage}`);
  }
}

/** `--port N` as a port number, undefined when not given. */
export function portFlag(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new UsageError(`--port must be a port number (1-65535), not ${JSON.stringify(value)}`);
  return port;
}

/** `--engine E`: the embedded broker (default) or real Knative Eventing. */
export function engineFlag(value: string | undefined): 'embedded' | 'knative' {
  const engine = value ?? 'embedded';
  if (engine !== 'embedded' && engine !== 'knative')
    throw new UsageError(`--engine must be embedded or knative, not ${JSON.stringify(value)}`);
  return engine;
}

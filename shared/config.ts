import { z } from 'zod';
import { knativeOidcTokenFile } from './cloudevents/sink-client.js';
import { BpaError } from './errors.js';
import { nodeSelectorSchema, type NodeSelector } from './schemas/placement.js';

/**
 * Config comes from environment variables, validated by zod at startup. A function's
 * `configSchema` receives the raw env record (every value a string or absent), so it is
 * written with the helpers below, e.g.
 *
 *   z.object({ SSH_USER: envString('root'), SSH_CONCURRENCY: envInt(10, { min: 1 }) })
 *
 * Empty strings count as "not set": a Knative Service env entry with `value: ""` falls back
 * to the default instead of failing as "not a number".
 */
export type Env = Record<string, string | undefined>;

const unsetWhenEmpty = (value: unknown) =>
  typeof value === 'string' && value.trim() === '' ? undefined : value;

/** A string variable with a default. */
export const envString = (defaultValue: string) =>
  z.preprocess(unsetWhenEmpty, z.string().default(defaultValue));

/** An optional string variable (absent or empty → undefined). */
export const envOptionalString = () => z.preprocess(unsetWhenEmpty, z.string().optional());

/** An integer variable with a default and optional bounds. */
export const envInt = (defaultValue: number, bounds: { min?: number; max?: number } = {}) => {
  let schema = z.coerce.number().int();
  if (bounds.min !== undefined) schema = schema.min(bounds.min);
  if (bounds.max !== undefined) schema = schema.max(bounds.max);
  return z.preprocess(unsetWhenEmpty, schema.default(defaultValue));
};

/** A boolean variable: true/false, 1/0, yes/no, on/off (case-insensitive). */
export const envBoolean = (defaultValue: boolean) =>
  z.preprocess(unsetWhenEmpty, z.stringbool().default(defaultValue));

/** A comma-separated list (blanks dropped), each entry from `values` when given. */
export const envList = <const T extends string>(defaultValue: T[], values?: readonly [T, ...T[]]) => {
  const item = values ? z.enum(values) : z.string();
  return z.preprocess(
    (value) => {
      const set = unsetWhenEmpty(value);
      if (typeof set !== 'string') return set;
      return set
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part !== '');
    },
    z.array(item).default(defaultValue as never),
  ) as unknown as z.ZodType<T[]>;
};

/**
 * A label map written `key=value,key2=value2` (blanks dropped), e.g. a nodeSelector: each key a
 * label key, each value a label value; a part without `=` or a key given twice is an error.
 * Absent or empty: {}.
 */
export const envLabelMap = (): z.ZodType<NodeSelector> =>
  z.preprocess(
    unsetWhenEmpty,
    z
      .string()
      .optional()
      .transform((text, ctx) => {
        const map: Record<string, string> = {};
        for (const part of (text ?? '').split(',')) {
          const entry = part.trim();
          if (entry === '') continue;
          const equals = entry.indexOf('=');
          const key = entry.slice(0, equals).trim();
          if (equals === -1 || key === '') {
            ctx.addIssue({ code: 'custom', message: `${JSON.stringify(entry)} is not key=value` });
            return z.NEVER;
          }
          if (Object.hasOwn(map, key)) {
            ctx.addIssue({ code: 'custom', message: `the key ${JSON.stringify(key)} is given twice` });
            return z.NEVER;
          }
          map[key] = entry.slice(equals + 1).trim();
        }
        return map;
      })
      .pipe(nodeSelectorSchema),
  ) as unknown as z.ZodType<NodeSelector>;

/** A JSON variable checked by `schema`; absent or empty: `defaultValue`. Not JSON: an error. */
export const envJson = <T>(schema: z.ZodType<T>, defaultValue: T): z.ZodType<T> =>
  z.preprocess(
    unsetWhenEmpty,
    z
      .string()
      .optional()
      .transform((text, ctx): unknown => {
        if (text === undefined) return defaultValue;
        try {
          return JSON.parse(text) as unknown;
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: `not JSON (${(error as Error).message})` });
          return z.NEVER;
        }
      })
      .pipe(schema),
  ) as unknown as z.ZodType<T>;

/** An http(s) URL variable, optional. */
export const envOptionalUrl = () => z.preprocess(unsetWhenEmpty, z.url({ protocol: /^https?$/ }).optional());

/** Settings every function server reads, whatever the function. */
export const serverEnvSchema = z.object({
  PORT: envInt(8080, { min: 0, max: 65535 }),
  HOST: envString('0.0.0.0'),
  /** Where `context.send()` posts: Knative injects K_SINK (SinkBinding); BROKER_URL otherwise. */
  K_SINK: envOptionalUrl(),
  BROKER_URL: envOptionalUrl(),
  /**
   * A bearer token sent with every event the function posts to its sink, read on each send: the
   * OIDC token Knative mounts under a SinkBinding when Eventing's authentication-oidc is on
   * (docs/knative.md "Event authorization"). Absent file: no Authorization header.
   */
  SINK_TOKEN_FILE: envString(knativeOidcTokenFile),
  /** Largest request body accepted, in bytes. */
  MAX_BODY_BYTES: envInt(1024 * 1024, { min: 1024 }),
  /** How long close()/SIGTERM waits for in-flight requests before cutting connections. */
  SHUTDOWN_GRACE_SECONDS: envInt(30, { min: 0 }),
});
export type ServerEnv = z.infer<typeof serverEnvSchema>;

/** One line per problem: `NAME: what is wrong`. */
export function describeConfigIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(env)'}: ${issue.message}`)
    .join('; ');
}

/**
 * Parses `env` with `schema`, or throws BpaError `InvalidConfig` naming every bad variable,
 * e.g. "Invalid configuration for software-install: SSH_CONCURRENCY: Too small: expected number to be >=1".
 */
export function parseEnv<T>(schema: z.ZodType<T>, env: Env, owner: string): T {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  throw new BpaError(
    'InvalidConfig',
    `Invalid configuration for ${owner}: ${describeConfigIssues(result.error)}`,
    'invalid',
  );
}

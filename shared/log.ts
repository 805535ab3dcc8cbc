/**
 * Structured JSON logs, one object per line on stdout (stderr for warn/error).
 * Every line of a request carries the CloudEvent id/type, the resource's namespace/name
 * and the trace id, through child loggers.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  /** Minimum level written. Default: LOG_LEVEL from env, else info. */
  level?: LogLevel;
  /** Where lines go. Default: process.stdout / process.stderr. Tests pass an array sink. */
  sink?: (line: string, level: LogLevel) => void;
  /** Fields on every line. */
  base?: Record<string, unknown>;
}

const defaultSink = (line: string, level: LogLevel) =>
  (level === 'warn' || level === 'error' ? process.stderr : process.stdout).write(line + '\n');

export function createLogger(options: LoggerOptions = {}): Logger {
  const envLevel = process.env.LOG_LEVEL as LogLevel | undefined;
  const level = options.level ?? (envLevel && envLevel in order ? envLevel : 'info');
  const sink = options.sink ?? defaultSink;
  const base = options.base ?? {};
  const write = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (order[lvl] < order[level]) return;
    sink(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...base, ...fields }), lvl);
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => createLogger({ level, sink, base: { ...base, ...fields } }),
  };
}

/** A logger that drops everything (benchmarks, quiet tests). */
export const silentLogger: Logger = createLogger({ sink: () => undefined, level: 'error' });

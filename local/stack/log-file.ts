import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { createLogger, type Logger, type LogLevel } from '../../shared/log.js';

/** A JSON-lines log file shared by every component of the stack, so the console stays readable. */
export interface LogFile {
  path: string;
  logger(component: string): Logger;
  close(): Promise<void>;
}

export function openLogFile(path: string, level?: LogLevel): LogFile {
  mkdirSync(dirname(path), { recursive: true });
  const stream: WriteStream = createWriteStream(path, { flags: 'a' });
  let closed = false;
  const sink = (line: string) => {
    if (!closed) stream.write(line + '\n');
  };
  return {
    path,
    logger: (component) => createLogger({ sink, base: { component }, ...(level ? { level } : {}) }),
    close: () =>
      new Promise<void>((resolve) => {
        if (closed) return resolve();
        closed = true;
        stream.end(() => resolve());
      }),
  };
}

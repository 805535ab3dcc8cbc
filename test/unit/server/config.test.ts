import { z } from 'zod';
import { BpaError } from '../../../shared/errors.js';
import {
  envBoolean,
  envInt,
  envList,
  envOptionalString,
  envOptionalUrl,
  envString,
  parseEnv,
  serverEnvSchema,
} from '../../../shared/config.js';

const schema = z.object({
  USER: envString('root'),
  KEY: envOptionalString(),
  CONCURRENCY: envInt(10, { min: 1, max: 100 }),
  VERBOSE: envBoolean(false),
  SOURCES: envList(['leases', 'nics'], ['leases', 'nics', 'pods']),
  SINK: envOptionalUrl(),
});

describe('env config', () => {
  it('applies defaults for absent and empty variables', () => {
    expect(parseEnv(schema, { CONCURRENCY: '', KEY: ' ' }, 'fn')).toEqual({
      USER: 'root',
      KEY: undefined,
      CONCURRENCY: 10,
      VERBOSE: false,
      SOURCES: ['leases', 'nics'],
      SINK: undefined,
    });
  });

  it('parses set variables', () => {
    expect(
      parseEnv(
        schema,
        {
          USER: 'ubuntu',
          KEY: 'k',
          CONCURRENCY: '3',
          VERBOSE: 'yes',
          SOURCES: 'pods, leases',
          SINK: 'http://b/',
        },
        'fn',
      ),
    ).toEqual({
      USER: 'ubuntu',
      KEY: 'k',
      CONCURRENCY: 3,
      VERBOSE: true,
      SOURCES: ['pods', 'leases'],
      SINK: 'http://b/',
    });
  });

  it('names every bad variable in one InvalidConfig error', () => {
    const parse = () =>
      parseEnv(schema, { CONCURRENCY: '0', SOURCES: 'leases,dns', SINK: 'ftp://x' }, 'software-install');
    expect(parse).toThrow(BpaError);
    try {
      parse();
    } catch (error) {
      const { reason, message, kind } = error as BpaError;
      expect(reason).toBe('InvalidConfig');
      expect(kind).toBe('invalid');
      expect(message).toMatch(/^Invalid configuration for software-install: /);
      expect(message).toContain('CONCURRENCY:');
      expect(message).toContain('SOURCES.1:');
      expect(message).toContain('SINK:');
    }
  });

  it('reads the server variables with their defaults', () => {
    expect(parseEnv(serverEnvSchema, {}, 'server')).toEqual({
      PORT: 8080,
      HOST: '0.0.0.0',
      K_SINK: undefined,
      BROKER_URL: undefined,
      SINK_TOKEN_FILE: '/oidc/token',
      MAX_BODY_BYTES: 1024 * 1024,
      SHUTDOWN_GRACE_SECONDS: 30,
    });
    expect(parseEnv(serverEnvSchema, { PORT: '9090', HOST: '127.0.0.1' }, 'server')).toMatchObject({
      PORT: 9090,
      HOST: '127.0.0.1',
    });
  });
});

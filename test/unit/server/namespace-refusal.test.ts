/**
 * A write refused because its namespace was not onboarded or is being deleted: nothing was
 * written and a retry would meet the same refusal, so both ways a function runs (the project's
 * function server through invoke(), and faas-js-runtime through funcHandle) answer "done" with
 * one log line, and every other error still answers as an error.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { BpaError, invalid } from '../../../shared/errors.js';
import { namespaceNotOnboarded, namespaceTerminating } from '../../../shared/k8s/api-errors.js';
import { FuncHttpError, funcHandle } from '../../../shared/server/func-adapter.js';
import { invoke, namespaceRefused } from '../../../shared/server/invoke.js';
import { on, type FunctionDefinition } from '../../../shared/server/types.js';
import { capturingLogger } from './test-function.js';

const notOnboarded = new BpaError(namespaceNotOnboarded, 'tenant-a was not onboarded', 'invalid', {
  namespace: 'tenant-a',
});
const terminating = new BpaError(namespaceTerminating, 'tenant-b is being deleted', 'invalid', {
  namespace: 'tenant-b',
});
const otherwise = invalid('InvalidProvisioning', 'spec.masters is empty');

describe('namespaceRefused', () => {
  it('logs a namespace that was not onboarded once, as a warning naming the command', () => {
    const { log, lines } = capturingLogger();
    expect(namespaceRefused(notOnboarded, log)).toBe(true);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'namespace not onboarded',
        namespace: 'tenant-a',
        command: 'kubectl apply -n tenant-a -k manifests/tenant',
        reason: namespaceNotOnboarded,
      }),
    ]);
  });

  it('logs a namespace being deleted once, as info', () => {
    const { log, lines } = capturingLogger();
    expect(namespaceRefused(terminating, log)).toBe(true);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'info',
        msg: 'namespace being deleted: nothing written there',
        namespace: 'tenant-b',
      }),
    ]);
  });

  it('is false, logging nothing, for any other error', () => {
    const { log, lines } = capturingLogger();
    expect(namespaceRefused(otherwise, log)).toBe(false);
    expect(namespaceRefused(new Error('boom'), log)).toBe(false);
    // The reason alone is not enough: the refusal must name its namespace.
    expect(namespaceRefused(new BpaError(namespaceNotOnboarded, 'no namespace said'), log)).toBe(false);
    expect(lines).toEqual([]);
  });
});

describe('invoke (the function server)', () => {
  it.each([
    ['not onboarded', notOnboarded],
    ['being deleted', terminating],
  ])('answers a namespace %s 204 ok', async (_what, error) => {
    const { log, lines } = capturingLogger();
    const answer = await invoke('test-fn', () => Promise.reject(error), { log });
    expect(answer).toEqual({ status: 204, outcome: 'ok' });
    expect(lines).toHaveLength(1);
  });

  it('answers any other error as an error, with its reason', async () => {
    const { log } = capturingLogger();
    const answer = await invoke('test-fn', () => Promise.reject(otherwise), { log });
    expect(answer).toMatchObject({ status: 400, outcome: 'invalid', reason: 'InvalidProvisioning' });
  });
});

describe('funcHandle (faas-js-runtime)', () => {
  const failing = (error: Error): FunctionDefinition<unknown> => ({
    name: 'test-fn',
    configSchema: z.object({}),
    events: { 'test.refused': on(z.unknown(), () => Promise.reject(error)) },
  });
  const event = new CloudEvent({ type: 'test.refused', source: '/test', id: 'e1', data: {} });
  // The adapter logs through its own process logger (stdout): keep the test's output quiet.
  const level = process.env.LOG_LEVEL;
  beforeAll(() => void (process.env.LOG_LEVEL = 'error'));
  afterAll(() => void (level === undefined ? delete process.env.LOG_LEVEL : (process.env.LOG_LEVEL = level)));

  it.each([
    ['not onboarded', notOnboarded],
    ['being deleted', terminating],
  ])('answers a namespace %s with nothing (204), not an error', async (_what, error) => {
    // Its context is faas-js-runtime's own (none of ours), so the adapter builds the scope.
    await expect(funcHandle(failing(error))({}, event)).resolves.toBeUndefined();
  });

  it('answers any other error as its HTTP status and reason', async () => {
    const answer = funcHandle(failing(otherwise))({}, event);
    await expect(answer).rejects.toBeInstanceOf(FuncHttpError);
    await expect(answer).rejects.toMatchObject({ statusCode: 400, name: 'InvalidProvisioning' });
  });
});

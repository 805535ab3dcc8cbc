import { runFunction } from '../../../shared/server/run-function.js';
import { capturingLogger, testFunction, untouchableKubeConfig } from './test-function.js';

async function waitUntilRefused(url: string): Promise<void> {
  for (;;) {
    try {
      await fetch(`${url}/health/liveness`);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('runFunction (container entry point)', () => {
  it('listens on HOST/PORT from env and drains on SIGTERM', async () => {
    const logs = capturingLogger();
    const server = await runFunction(testFunction({ contexts: [], events: [] }), {
      env: { HOST: '127.0.0.1', PORT: '0' },
      kubeConfig: untouchableKubeConfig,
      log: logs.log,
      exitProcess: false,
    });
    expect(server?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${server!.url}/health/readiness`)).status).toBe(200);
    process.emit('SIGTERM', 'SIGTERM');
    await waitUntilRefused(server!.url);
    expect(
      logs.lines.some((line) => line.msg === 'signal received, shutting down' && line.signal === 'SIGTERM'),
    ).toBe(true);
  });

  it('logs one clear line and rejects when the config is invalid', async () => {
    const logs = capturingLogger();
    await expect(
      runFunction(testFunction({ contexts: [], events: [] }), {
        env: { HOST: '127.0.0.1', PORT: '0', REPEAT: '9' },
        kubeConfig: untouchableKubeConfig,
        log: logs.log,
        exitProcess: false,
      }),
    ).rejects.toMatchObject({ reason: 'InvalidConfig' });
    const line = logs.lines.find((l) => l.msg === 'function failed to start');
    expect(line).toMatchObject({ function: 'test-fn', reason: 'InvalidConfig' });
    expect(String(line?.message)).toMatch(/REPEAT/);
  });
});

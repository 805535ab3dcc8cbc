import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Golden files live under test/golden/; `UPDATE_GOLDEN=1` rewrites them (review the diff). */
export const goldenRoot = resolve('test/golden');
export const fixturesRoot = resolve('test/fixtures');

export function expectGolden(relativePath: string, actual: string): void {
  const path = resolve(goldenRoot, relativePath);
  if (process.env.UPDATE_GOLDEN === '1') {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, actual);
    return;
  }
  if (!existsSync(path))
    throw new Error(`golden file ${path} is missing: run the test with UPDATE_GOLDEN=1 and review it`);
  expect(actual).toBe(readFileSync(path, 'utf8'));
}

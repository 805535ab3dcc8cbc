/**
 * What a resilience test file held: per fault category, how many faults it injected, how many
 * the system recovered from (or refused cleanly) and how many it lost. Each file writes its own
 * JSON under test/artifacts/resilience/<run>/ (workers are separate processes); the reporter adds
 * them up at the end of the run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const categories = [
  'API faults',
  'Event faults',
  'Host faults',
  'Bad input',
  'Load',
  'Security',
  // Hostile tenants (contract section 12): injected = attacks tried, lost = attacks that gained
  // the tenant anything outside its namespace. Reported as `attacks tried N, gained N`.
  'Attacks',
  // Generated bad requests to every HTTP surface (issue 28): injected = requests tried, lost =
  // answered 5xx, crashed = the server died or stopped answering. Reported as
  // `HTTP inputs tried N, 5xx N, crashed N`.
  'HTTP inputs',
] as const;
export type FaultCategory = (typeof categories)[number];

export interface CategoryCount {
  injected: number;
  recovered: number;
  lost: number;
  /** Faults after which the system under test was gone (died, or no longer answered). */
  crashed?: number;
}

/** test/artifacts/resilience/<run>/: the run's folder, named by the reporter (BPA_RESILIENCE_RUN). */
export const tallyDir = join(
  fileURLToPath(new URL('../../artifacts/resilience/', import.meta.url)),
  process.env.BPA_RESILIENCE_RUN ?? 'run-without-reporter',
);

export class FaultTally {
  private readonly counts = new Map<FaultCategory, CategoryCount>();
  /** Free-form figures (time to recover, RSS...) printed under the report. */
  readonly notes: string[] = [];

  constructor(private readonly file: string) {}

  /** One fault: injected, and either recovered or lost. */
  record(category: FaultCategory, recovered: boolean): void {
    this.add(category, { injected: 1, recovered: recovered ? 1 : 0, lost: recovered ? 0 : 1 });
  }

  add(category: FaultCategory, count: CategoryCount): void {
    const current = this.counts.get(category) ?? { injected: 0, recovered: 0, lost: 0 };
    const crashed = (current.crashed ?? 0) + (count.crashed ?? 0);
    this.counts.set(category, {
      injected: current.injected + count.injected,
      recovered: current.recovered + count.recovered,
      lost: current.lost + count.lost,
      ...(crashed > 0 || current.crashed !== undefined || count.crashed !== undefined ? { crashed } : {}),
    });
    this.save();
  }

  note(line: string): void {
    this.notes.push(line);
    process.stdout.write(`[resilience] ${line}\n`);
    this.save();
  }

  count(category: FaultCategory): CategoryCount {
    return this.counts.get(category) ?? { injected: 0, recovered: 0, lost: 0 };
  }

  /** Written after every change, so a crash mid-file still leaves what was held so far. */
  private save(): void {
    mkdirSync(tallyDir, { recursive: true });
    const name = basename(this.file).replace(/\.test\.ts$/, '');
    writeFileSync(
      join(tallyDir, `${name}.json`),
      JSON.stringify({ file: name, counts: Object.fromEntries(this.counts), notes: this.notes }, null, 2),
    );
  }
}

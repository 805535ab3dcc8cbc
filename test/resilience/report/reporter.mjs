// Jest reporter: after a run that included the resilience project, adds up the per-file tallies
// (test/artifacts/resilience/*.json, written by test/resilience/report/tally.ts) and prints one
// line per fault category: `<category>: faults injected N, recovered N, lost N`.
// The tests themselves assert lost === 0; this only reports.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const order = ['API faults', 'Event faults', 'Host faults', 'Bad input', 'Load', 'Security'];

export default class ResilienceReporter {
  constructor(globalConfig) {
    this.dir = join(globalConfig.rootDir, 'test', 'artifacts', 'resilience');
  }

  onRunStart() {
    // Tallies of an earlier run must not be counted again.
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true });
  }

  onRunComplete(_contexts, results) {
    const ran = results.testResults.some((file) => file.testFilePath.includes('/test/resilience/'));
    if (!ran || !existsSync(this.dir)) return;
    const totals = new Map();
    const notes = [];
    for (const name of readdirSync(this.dir)
      .filter((n) => n.endsWith('.json'))
      .sort()) {
      const tally = JSON.parse(readFileSync(join(this.dir, name), 'utf8'));
      for (const [category, count] of Object.entries(tally.counts)) {
        const total = totals.get(category) ?? { injected: 0, recovered: 0, lost: 0 };
        total.injected += count.injected;
        total.recovered += count.recovered;
        total.lost += count.lost;
        totals.set(category, total);
      }
      for (const note of tally.notes) notes.push(`  ${tally.file}: ${note}`);
    }
    const categories = [...order, ...[...totals.keys()].filter((c) => !order.includes(c))];
    const lines = categories
      .filter((category) => totals.has(category))
      .map((category) => {
        const t = totals.get(category);
        return `${category}: faults injected ${t.injected}, recovered ${t.recovered}, lost ${t.lost}`;
      });
    process.stdout.write(
      ['', 'Resilience figures:', ...notes, '', 'Resilience report:', ...lines, ''].join('\n') + '\n',
    );
  }
}

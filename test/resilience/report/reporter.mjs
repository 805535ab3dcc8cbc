// Jest reporter: after a run that included the resilience project, adds up the per-file tallies
// (test/artifacts/resilience/*.json, written by test/resilience/report/tally.ts) and prints one
// line per fault category: `<category>: faults injected N, recovered N, lost N`.
// The tests themselves assert lost === 0; this only reports.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const order = [
  'API faults',
  'Event faults',
  'Host faults',
  'Bad input',
  'Load',
  'Security',
  'Attacks',
  'HTTP inputs',
];

// Categories whose line reads in their own words (the tallies count the same three numbers).
const formats = {
  Attacks: (t) => `Attacks: attacks tried ${t.injected}, gained ${t.lost}`,
  // Bad HTTP requests: lost = answered 5xx; crashed = the server died or stopped answering.
  'HTTP inputs': (t) => `HTTP inputs tried ${t.injected}, 5xx ${t.lost}, crashed ${t.crashed ?? 0}`,
};

export default class ResilienceReporter {
  constructor(globalConfig) {
    // Each run writes its tallies to a folder of its own (the checkout is shared: another jest
    // run must neither count nor delete them). Test workers inherit the variable.
    this.root = join(globalConfig.rootDir, 'test', 'artifacts', 'resilience');
    process.env.BPA_RESILIENCE_RUN ??= `run-${Date.now()}-${process.pid}`;
    this.dir = join(this.root, process.env.BPA_RESILIENCE_RUN);
  }

  onRunStart() {
    mkdirSync(this.dir, { recursive: true });
    // Folders of runs older than a day are of no use any more.
    for (const name of readdirSync(this.root)) {
      const path = join(this.root, name);
      if (name.startsWith('run-') && Date.now() - statSync(path).mtimeMs > 86_400_000)
        rmSync(path, { recursive: true, force: true });
    }
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
        if (count.crashed !== undefined) total.crashed = (total.crashed ?? 0) + count.crashed;
        totals.set(category, total);
      }
      for (const note of tally.notes) notes.push(`  ${tally.file}: ${note}`);
    }
    const categories = [...order, ...[...totals.keys()].filter((c) => !order.includes(c))];
    const lines = categories
      .filter((category) => totals.has(category))
      .map((category) => {
        const t = totals.get(category);
        const format = formats[category];
        if (format) return format(t);
        return `${category}: faults injected ${t.injected}, recovered ${t.recovered}, lost ${t.lost}`;
      });
    const report =
      ['', 'Resilience figures:', ...notes, '', 'Resilience report:', ...lines, ''].join('\n') + '\n';
    writeFileSync(join(this.root, 'last-report.txt'), report);
    process.stdout.write(report);
  }
}

import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Failure, Success } from '../../../shared/k8s/step-report.js';
import type { EventRecord } from '../../../shared/k8s/events.js';
import {
  conditionReasons,
  errorReason,
  eventReasons,
  type EventReason,
  type StepReason,
} from '../../../shared/reasons.js';

// Type-level: `npm run typecheck` fails if any of these lines stops being an error, i.e. if a
// reason outside the catalogue could again be written on a step or an Event.
// @ts-expect-error a stray literal is not a step reason
const strayStep: StepReason = 'NotInTheCatalogue';
// @ts-expect-error an Event-only reason is not a condition's
const eventOnlyOnStep: Failure['reason'] = 'InstallJobCreated';
// @ts-expect-error a success has a catalogued reason, never a caught error's
const caughtOnSuccess: Success['reason'] = errorReason({ reason: 'KubernetesForbidden' });
// @ts-expect-error a stray literal is not an Event reason
const strayEvent: EventRecord['reason'] = 'Uploading';
const fine: EventReason[] = ['InstallJobCreated', 'HostNotFound', errorReason({ reason: 'Anything' })];

describe('the reason catalogues', () => {
  it('keeps condition and Event-only reasons apart, each with what it means', () => {
    const conditionNames = Object.keys(conditionReasons);
    for (const [name, spec] of Object.entries(eventReasons)) {
      expect({ name, inBoth: conditionNames.includes(name) }).toEqual({ name, inBoth: false });
      expect(spec.means.length).toBeGreaterThan(10);
    }
    expect([strayStep, eventOnlyOnStep, caughtOnSuccess, strayEvent, ...fine]).toHaveLength(7);
  });

  it('catalogues every reason literal the product puts on an Event', () => {
    // A literal passed through a variable typed `string` would escape the types; this reads the
    // sources for `reason: '<Word>'` next to recordEvent and checks each is catalogued.
    const known = new Set([...Object.keys(conditionReasons), ...Object.keys(eventReasons)]);
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith('.ts')) files.push(path);
      }
    };
    walk('functions');
    walk('shared');
    const unknown: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      if (!text.includes('recordEvent(')) continue;
      for (const call of text.split('recordEvent(').slice(1)) {
        const reason = /reason: '([A-Za-z]+)'/.exec(call.slice(0, 400))?.[1];
        if (reason && !known.has(reason)) unknown.push(`${file}: ${reason}`);
      }
    }
    expect(unknown).toEqual([]);
  });
});

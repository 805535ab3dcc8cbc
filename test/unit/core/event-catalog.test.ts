import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildEventCatalog } from '../../../shared/events/catalog.js';
import { EventTypes } from '../../../shared/events/types.js';

const catalogDir = resolve('shared/events/catalog');

describe('event catalogue', () => {
  const generated = buildEventCatalog();

  it('has one JSON Schema per chain event type', () => {
    for (const type of Object.values(EventTypes)) {
      const schema = JSON.parse(generated.get(`${type}.json`) ?? 'null') as { title?: string; type?: string };
      expect(schema).toMatchObject({ title: type, type: 'object' });
    }
  });

  it('matches the checked-in files (run `npm run catalog` after changing a schema)', () => {
    const onDisk = readdirSync(catalogDir).filter((name) => name.endsWith('.json'));
    expect(onDisk.sort()).toEqual([...generated.keys()].sort());
    for (const [name, text] of generated) {
      expect({ name, text: readFileSync(join(catalogDir, name), 'utf8') }).toEqual({ name, text });
    }
  });
});

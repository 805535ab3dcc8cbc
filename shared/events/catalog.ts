import { z } from 'zod';
import { imageSchema } from '../schemas/image.js';
import { provisioningSchema } from '../schemas/provisioning.js';
import { softwareSchema } from '../schemas/software.js';
import { chainEventDataSchemas } from './types.js';

/**
 * The event catalogue as JSON Schema documents, one file per chain event type
 * (`<type>.json`, the schema of the event's `data`) plus the resources the chain reads
 * (`resource.<kind>.json`). Generated from the zod schemas; `npm run catalog` writes them to
 * shared/events/catalog/ and a unit test fails when the checked-in files differ.
 */
export function buildEventCatalog(): Map<string, string> {
  const files = new Map<string, string>();
  const add = (fileName: string, title: string, description: string, schema: z.ZodType) => {
    const { $schema, ...rest } = z.toJSONSchema(schema, { unrepresentable: 'any' });
    const jsonSchema = {
      $schema,
      $id: `https://bpa.akraino.org/catalog/${fileName}`,
      title,
      description,
      ...rest,
    };
    files.set(fileName, JSON.stringify(jsonSchema, null, 2) + '\n');
  };
  for (const [type, schema] of Object.entries(chainEventDataSchemas).sort(([a], [b]) => a.localeCompare(b))) {
    add(`${type}.json`, type, `CloudEvent data of type ${type}`, schema);
  }
  add(
    'resource.provisioning.json',
    'Provisioning',
    'bpa.akraino.org/v1alpha1 Provisioning',
    provisioningSchema,
  );
  add('resource.software.json', 'Software', 'bpa.akraino.org/v1alpha1 Software', softwareSchema);
  add('resource.image.json', 'Image', 'bpa.akraino.org/v1alpha1 Image', imageSchema);
  return files;
}

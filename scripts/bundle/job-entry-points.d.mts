/** Types of job-entry-points.mjs for the TypeScript that reads it (tests). */
export declare const jobEntryPoints: Record<string, Record<string, string>>;

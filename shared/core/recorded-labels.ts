/**
 * Labels do not bump `metadata.generation`, yet `cluster` and `cluster-type` decide what the
 * chain does (contract section 10). So the status records the labels it describes
 * (`status.observedLabels`), and a difference from the live labels is new work, exactly like a
 * new generation.
 */
export const recordedLabelKeys = ['cluster', 'cluster-type'] as const;
export type RecordedLabels = Partial<Record<(typeof recordedLabelKeys)[number], string>>;

/** Status field holding the recorded labels. */
export const observedLabelsField = 'observedLabels';

/** The labels to record, from an object's live labels (absent keys stay absent). */
export function labelsToRecord(labels: Readonly<Record<string, string>> | undefined): RecordedLabels {
  const recorded: RecordedLabels = {};
  for (const key of recordedLabelKeys) {
    const value = labels?.[key];
    if (typeof value === 'string') recorded[key] = value;
  }
  return recorded;
}

/** The labels a status says it describes, or undefined when none are recorded (older status). */
export function recordedLabelsOf(
  status: Readonly<Record<string, unknown>> | undefined,
): RecordedLabels | undefined {
  const value = status?.[observedLabelsField];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const recorded: RecordedLabels = {};
  for (const key of recordedLabelKeys) {
    const item = (value as Record<string, unknown>)[key];
    if (typeof item === 'string') recorded[key] = item;
  }
  return recorded;
}

/**
 * True when the status describes other labels than the object has now. A status that records
 * no labels (nothing handled yet, or written before labels were recorded) is not "changed":
 * the generation rules decide for it.
 */
export function labelsChanged(
  labels: Readonly<Record<string, string>> | undefined,
  status: Readonly<Record<string, unknown>> | undefined,
): boolean {
  const recorded = recordedLabelsOf(status);
  if (!recorded) return false;
  const live = labelsToRecord(labels);
  return recordedLabelKeys.some((key) => live[key] !== recorded[key]);
}

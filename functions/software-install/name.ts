import { fieldManagerFor } from '../../shared/k8s/status-apply.js';

/**
 * The function's name, in the definition (index.ts) and as the `component` of the Events and the
 * `source` of the events that software-install and its install Job (install-job/) write: the Job
 * runs without the definition, so the name is a module of its own rather than a handler's context.
 */
export const functionName = 'software-install';

/**
 * The field managers of the two writers of a Software's status (shared/k8s/status-apply.ts): the
 * function (claim, Job launched, announced outcome, by-hand controls) and its install Job (the
 * outcome and the per-host results). Two managers, so neither's apply drops the other's fields.
 */
export const functionManager = fieldManagerFor(functionName);
export const installJobManager = fieldManagerFor(`${functionName}-job`);

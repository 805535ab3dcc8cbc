import { fieldManagerFor } from '../../shared/k8s/status-apply.js';

/** The function's name (the definition's, index.ts) and its field manager for status applies (shared/k8s/status-apply.ts). */
export const functionName = 'kud-job-launch';
export const functionManager = fieldManagerFor(functionName);

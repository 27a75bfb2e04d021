/** Why this Node cannot run Patchbay (one line saying what to do), or undefined when it can. */
export function nodeVersionProblem(version: string, required: string): string | undefined;

// Plain JavaScript on purpose: this runs before Node is known to understand TypeScript, so an old
// Node gets one clear line instead of a loader stack trace for `src/cli.ts`.

/**
 * Why this Node cannot run Patchbay, or undefined when it can. `required` is package.json's
 * `engines.node`, a single `>=major.minor[.patch]` range.
 * @param {string} version process.versions.node, for example "20.20.2"
 * @param {string} required for example ">=22.18"
 * @returns {string | undefined}
 */
export function nodeVersionProblem(version, required) {
  const wanted = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(required.trim());
  if (!wanted) throw new Error(`engines.node "${required}" is not a >= range`);
  const have = version.replace(/^v/, '').split('.').map(Number);
  const need = wanted.slice(1).map((part) => Number(part ?? 0));
  for (let i = 0; i < 3; i++) {
    if ((have[i] ?? 0) > need[i]) return undefined;
    if ((have[i] ?? 0) < need[i]) {
      return `patchbay needs Node.js ${required.replace(/^>=\s*/, '')} or later (it runs TypeScript directly); this is Node.js ${version.replace(/^v/, '')}. Run it through npm (npm start, npm run patchbay --), which uses the Node the project installs, or upgrade Node.`;
    }
  }
  return undefined;
}

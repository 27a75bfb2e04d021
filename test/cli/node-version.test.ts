import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { nodeVersionProblem } from '../../bin/node-version.js';

const exec = promisify(execFile);
const root = new URL('../..', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as {
  packages: Record<string, { engines?: unknown }>;
};
const readme = readFileSync(new URL('README.md', root), 'utf8');

/**
 * npm's engine ranges as the lock file holds them: `||` alternatives of space-separated
 * comparators (>=, <, ^, x-ranges, *). Enough of semver for these; an unknown form fails the test.
 */
function satisfies(version: string, range: string): boolean {
  const have = version.split('.').map(Number) as [number, number, number];
  const cmp = (parts: number[]) => {
    for (let i = 0; i < 3; i++) if (have[i] !== (parts[i] ?? 0)) return have[i]! - (parts[i] ?? 0);
    return 0;
  };
  const nums = (text: string) =>
    text
      .split('.')
      .filter((p) => p !== '' && p !== 'x' && p !== '*')
      .map(Number);
  const one = (comparator: string): boolean => {
    const match = /^(>=|<=|>|<|\^|~)?(.*)$/.exec(comparator)!;
    const [op, v] = [match[1], match[2]!];
    if (v === '*' || v === '') return true;
    const parts = nums(v);
    if (parts.some(Number.isNaN)) throw new Error(`unknown engine range "${range}"`);
    switch (op) {
      case '>=':
        return cmp(parts) >= 0;
      case '>':
        return cmp(parts) > 0;
      case '<':
        return cmp(parts) < 0;
      case '<=':
        return cmp(parts) <= 0;
      case '^':
        return have[0] === parts[0] && cmp(parts) >= 0;
      case '~':
        return have[0] === parts[0] && have[1] === (parts[1] ?? have[1]) && cmp(parts) >= 0;
      default:
        return parts.every((p, i) => have[i] === p);
    }
  };
  return range.split('||').some((alt) =>
    alt
      .trim()
      .replace(/(>=|<=|>|<)\s+/g, '$1')
      .split(/\s+/)
      .every(one),
  );
}

describe('the Node version Patchbay documents and checks', () => {
  const minimum = pkg.engines.node.replace(/^>=\s*/, '');
  const documented = minimum.split('.').length === 2 ? `${minimum}.0` : minimum;

  it('is the one the README names', () => {
    expect(readme).toContain(`Node.js ${minimum} or later`);
    expect(readme).not.toMatch(/Node(\.js)? 20 or later/);
  });

  it('satisfies the engines of every package in the lock file, so npm ci prints no EBADENGINE warning on it', () => {
    const refused = Object.entries(lock.packages).flatMap(([name, entry]) => {
      const range = (entry.engines as { node?: string } | undefined)?.node;
      return typeof range === 'string' && !satisfies(documented, range) ? [`${name || '(root)'}: ${range}`] : [];
    });
    expect(refused).toEqual([]);
  });

  it('refuses an older Node in one line that says what to do, and accepts the documented one', () => {
    expect(nodeVersionProblem('20.20.2', pkg.engines.node)).toBe(
      `patchbay needs Node.js ${minimum} or later (it runs TypeScript directly); this is Node.js 20.20.2. Run it through npm (npm start, npm run patchbay --), which uses the Node the project installs, or upgrade Node.`,
    );
    expect(nodeVersionProblem('22.17.9', pkg.engines.node)).toMatch(/^patchbay needs Node\.js/);
    expect(nodeVersionProblem(documented, pkg.engines.node)).toBeUndefined();
    expect(nodeVersionProblem('24.0.0', pkg.engines.node)).toBeUndefined();
    expect(nodeVersionProblem('v100.1.1', pkg.engines.node)).toBeUndefined();
  });

  it('the patchbay command (bin/patchbay.js) runs the CLI on this Node', async () => {
    const { stdout } = await exec(process.execPath, ['bin/patchbay.js', 'help'], { cwd: root });
    expect(stdout).toMatch(/^Patchbay: a self-hostable chat-ops coding agent\./);
  });
});

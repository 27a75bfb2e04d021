import { rulesOf, type SourcedRule } from '../../src/core/repository-scout.ts';

/**
 * A pull request title in the repository's learned convention: `fix: Repair add` when its titles
 * follow Conventional Commits (the commonest type; the title's own type when it already has one).
 */
export function conventionalTitle(title: string, rules: readonly SourcedRule[] | undefined): string {
  const rule = rulesOf(rules, 'conventional-title')[0];
  if (!rule || /^[a-z]+(\([^)]*\))?!?: /.test(title)) return title;
  return `${rule.type}: ${title.charAt(0).toLowerCase()}${title.slice(1)}`;
}

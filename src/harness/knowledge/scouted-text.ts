import { quoteUntrusted } from '../../core/quote-untrusted.ts';
import type { ScoutReport } from '../../core/repository-scout.ts';

/**
 * The scout's rules as the agent reads them: one quoted block, each rule with its evidence and the
 * date it was seen. Comments from the history are inside the quote as data: whatever they say,
 * they reach the model as what someone wrote on a pull request, never as an instruction.
 */
export function renderScoutedRules(report: ScoutReport | undefined, repo: string): string | undefined {
  if (!report || report.rules.length === 0) return undefined;
  const lines = report.rules.map((r) => {
    const pulls = r.evidence.pulls.map((n) => `#${n}`).join(', ');
    const quote = r.evidence.quote === undefined ? '' : `\n  said: "${r.evidence.quote}"`;
    const links = r.evidence.links.length ? `\n  links: ${r.evidence.links.join(' ')}` : '';
    return `- ${r.text} (evidence: ${pulls || 'the default branch rules'}; seen ${r.seen.slice(0, 10)})${quote}${links}`;
  });
  return quoteUntrusted({
    what: `What Patchbay's scout learned from the last ${report.pullsRead} closed pull requests of ${repo} (${report.at.slice(0, 10)}); the harness applies the branch, title, sign-off and open-PR rules itself`,
    author: "people and bots on the repository's pull requests, counted and quoted by the scout",
    body: lines.join('\n'),
  });
}

import type { PreOpenCheck, PublishInput } from '../../src/core/publisher.ts';
import { parseRepoUrl } from '../../src/core/repo-ref.ts';
import { rulesOf, type SourcedRule } from '../../src/core/repository-scout.ts';
import type { GitHubClient } from './github-client.ts';

type PullJson = { head: { ref: string }; user: { login: string } | null };

/**
 * Before a new pull request opens on a repository the scout read: an open-PR limit is checked
 * against the App's open pull requests there (at the limit, none is opened: a bot would close it,
 * and the work stays on its pushed branch), and a CLA check Patchbay cannot satisfy is named with
 * its link. Nothing is said when the branch already has its pull request (no new one opens).
 */
export async function checkBeforeOpen(
  deps: { client: GitHubClient; gitUrl: string },
  input: PublishInput,
): Promise<PreOpenCheck> {
  const repo = parseRepoUrl(input.session.repo, deps.gitUrl);
  const limits = rulesOf(input.rules, 'open-pr-limit');
  const clas = (input.rules ?? []).filter((r) => r.rule.kind === 'check' && r.rule.cla);
  if (!repo || (limits.length === 0 && clas.length === 0)) return { notes: [] };
  const octokit = await deps.client.forRepo(repo);
  const bot = await deps.client.identity();
  const open: PullJson[] = [];
  for (let page = 1; page <= 5; page += 1) {
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/pulls', {
      owner: repo.owner,
      repo: repo.repo,
      state: 'open',
      per_page: 100,
      page,
      request: { signal: input.signal },
    });
    open.push(...(data as PullJson[]));
    if (data.length < 100) break;
  }
  if (open.some((p) => p.head.ref === input.branch)) return { notes: [] };
  const notes = clas.map((r) => claNote(r));
  const mine = open.filter((p) => p.user?.login.toLowerCase() === bot.login.toLowerCase()).length;
  const limit = Math.min(...limits.map((l) => l.limit));
  if (mine < limit) return { notes };
  const said = (input.rules ?? []).find((r) => r.rule.kind === 'open-pr-limit');
  const evidence = said ? ` (learned from ${said.evidence.pulls.map((n) => `#${n}`).join(', ')})` : '';
  return {
    hold: `No pull request was opened: ${repo.owner}/${repo.repo} closes pull requests from authors with more than ${limit} open${evidence}, and Patchbay already has ${mine} open there. The work is on branch \`${input.branch}\` (${input.commit.slice(0, 12)}); open a pull request from it once fewer are open.`,
    notes,
  };
}

function claNote(rule: SourcedRule): string {
  const name = rule.rule.kind === 'check' ? rule.rule.name : '';
  const link = rule.evidence.links[0];
  return `This repository checks a contributor licence agreement (\`${name}\`${link ? `: ${link}` : ''}). Patchbay cannot sign it: the pull request can merge only once someone who may sign has done so.`;
}

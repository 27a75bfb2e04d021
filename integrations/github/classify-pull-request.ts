import { z } from 'zod';
import { isBot } from './bot-mention.ts';
import type { BotIdentity } from './github-client.ts';
import { Installation, Repository, User, type Classified } from './webhook-payloads.ts';

const PullRequestEvent = z.object({
  action: z.string(),
  pull_request: z
    .object({
      number: z.number(),
      title: z.string(),
      body: z.string().nullable().optional(),
      merged: z.boolean().nullable().optional(),
      node_id: z.string().optional(),
      draft: z.boolean().optional(),
      head: z.object({ sha: z.string() }).passthrough().optional(),
    })
    .passthrough(),
  repository: Repository,
  sender: User,
  installation: Installation.optional(),
});

/**
 * A `pull_request` event: commits pushed by someone other than the App (`pull-pushed`), or the pull
 * request closed unmerged by a person (`pull-closed`); anything else is ignored.
 */
export function classifyPullRequest(payload: unknown, bot: BotIdentity): Classified {
  const p = PullRequestEvent.safeParse(payload);
  if (!p.success) return { kind: 'broken', reason: 'unreadable pull_request payload' };
  const pull = p.data.pull_request;
  if (p.data.action === 'synchronize' && pull.head && p.data.installation && !isBot(p.data.sender, bot)) {
    return {
      kind: 'pull-pushed',
      pushed: {
        installationId: p.data.installation.id,
        owner: p.data.repository.owner.login,
        repo: p.data.repository.name,
        number: pull.number,
        ...(pull.node_id && { nodeId: pull.node_id }),
        draft: pull.draft ?? false,
        title: pull.title,
        headSha: pull.head.sha,
        body: pull.body ?? '',
        sender: { login: p.data.sender.login, id: p.data.sender.id },
      },
    };
  }
  if (p.data.action !== 'closed') return { kind: 'ignore', reason: `pull_request ${p.data.action}` };
  if (pull.merged) return { kind: 'ignore', reason: 'pull request merged' };
  if (isBot(p.data.sender, bot)) return { kind: 'ignore', reason: 'closed by a bot' };
  if (!p.data.installation) return { kind: 'ignore', reason: 'delivery without an installation (not an App webhook)' };
  return {
    kind: 'pull-closed',
    closed: {
      installationId: p.data.installation.id,
      owner: p.data.repository.owner.login,
      repo: p.data.repository.name,
      number: pull.number,
      title: pull.title,
      body: pull.body ?? '',
      sender: { login: p.data.sender.login, id: p.data.sender.id },
    },
  };
}

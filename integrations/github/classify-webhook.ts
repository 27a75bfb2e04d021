import type { BotIdentity } from './github-client.ts';
import { classifyCheckRun, classifyCheckSuite, classifyWorkflowRun } from './classify-ci.ts';
import { classifyPullRequest } from './classify-pull-request.ts';
import {
  classifyIssueComment,
  classifyIssueLabeled,
  classifyReview,
  classifyReviewComment,
} from './classify-requests.ts';
import type { Classified } from './webhook-payloads.ts';

/**
 * Decides what a webhook delivery asks Patchbay to do, from the payload alone: a request for work
 * (a mention in a PR or issue conversation, a review or review comment, the trigger label), an
 * installation change, CI that finished, a pull request pushed to or closed, or nothing. Pure, so
 * the rules are table-tested; each event family is classified in its own module.
 */
export function classifyWebhook(event: string, payload: unknown, bot: BotIdentity, triggerLabel: string): Classified {
  switch (event) {
    case 'installation':
    case 'installation_repositories':
      return { kind: 'installation' };
    case 'issue_comment':
      return classifyIssueComment(payload, bot);
    case 'pull_request_review_comment':
      return classifyReviewComment(payload, bot);
    case 'pull_request_review':
      return classifyReview(payload, bot);
    case 'issues':
      return classifyIssueLabeled(payload, bot, triggerLabel);
    case 'pull_request':
      return classifyPullRequest(payload, bot);
    case 'check_run':
      return classifyCheckRun(payload);
    case 'check_suite':
      return classifyCheckSuite(payload);
    case 'workflow_run':
      return classifyWorkflowRun(payload);
    default:
      return { kind: 'ignore', reason: `event ${event}` };
  }
}

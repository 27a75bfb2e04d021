import type { ThreadRef } from '../core/thread-ref.ts';
import type { ThreadLink } from './api-types.ts';

/** A thread with the address people open it at, when it has one. */
export function threadLink(ref: ThreadRef, options: { githubWebUrl: string }): ThreadLink {
  switch (ref.source) {
    case 'slack':
      return {
        ...ref,
        label: 'Slack thread',
        url: `https://app.slack.com/client/${enc(ref.teamId)}/${enc(ref.channel)}/thread/${enc(ref.channel)}-${enc(ref.threadTs)}`,
      };
    case 'github': {
      const base = options.githubWebUrl.replace(/\/+$/, '');
      const kind = ref.kind === 'pull' ? 'pull' : 'issues';
      const label = `${ref.owner}/${ref.repo}#${ref.number}`;
      return {
        ...ref,
        label: ref.kind === 'pull' ? `Pull request ${label}` : `Issue ${label}`,
        url: `${base}/${enc(ref.owner)}/${enc(ref.repo)}/${kind}/${ref.number}`,
      };
    }
    case 'linear':
      return { ...ref, label: `Linear issue ${ref.issueId}` };
    case 'web':
      return { ...ref, label: 'Web page' };
    case 'cli':
      return { ...ref, label: 'Command line' };
    default: {
      const _never: never = ref;
      return _never;
    }
  }
}

const enc = encodeURIComponent;

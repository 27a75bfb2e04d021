import type { Logger } from 'pino';
import type { ImageIntake } from '../../src/core/attachment.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { GitHubClient } from './github-client.ts';
import type { GitHubStore } from './github-store.ts';
import type { ProgressComments } from './progress-comments.ts';

/** What GitHub's interpreter and each of its event families read and write. */
export type InterpreterDeps = {
  client: GitHubClient;
  store: GitHubStore;
  context: Pick<IntegrationContext, 'sessions' | 'publicUrl' | 'addLesson' | 'outcomes'>;
  /** Where the progress comments the reply step posts are awaited by the replier. */
  comments: ProgressComments;
  gitUrl: string;
  triggerLabel: string;
  /** Takes the images a request's body shows in, from GitHub's own hosts; without it they are left out. */
  images?: { intake: ImageIntake; hosts: readonly string[] };
  log: Logger;
};

import type { WebClient } from '@slack/web-api';

/** The part of Slack's Web API client the integration calls. */
export type SlackWeb = Pick<WebClient, 'chat' | 'reactions' | 'users' | 'conversations' | 'agents' | 'assistant'>;

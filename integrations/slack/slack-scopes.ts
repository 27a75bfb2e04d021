/** The bot scopes Patchbay uses, as slack-app-manifest.yaml asks for them (a test keeps the two equal). */
export const SLACK_BOT_SCOPES = [
  'app_mentions:read',
  'chat:write',
  'files:read',
  'reactions:write',
  'users:read',
  'users:read.email',
  'channels:history',
  'groups:history',
  'im:history',
  'mpim:history',
  'files:write',
  'assistant:write',
] as const;

/**
 * Which Slack organisations may ask Patchbay for work. The workspace that installed the app is
 * trusted as a team; people from other organisations reach it through Slack Connect (a channel
 * shared with another company), and their events carry their own team in `user_team` (mentions) or
 * `team` (messages), or `user.team_id` (button clicks). Those are refused unless the operator listed
 * their team in SLACK_ALLOWED_TEAMS.
 */
export type SlackTeams = { home: string; allowed: readonly string[] };

/** Whether a person of `userTeam` may ask; an event that names no team is from the home workspace. Pure. */
export function teamAllowed(teams: SlackTeams, userTeam: string | undefined): boolean {
  if (!userTeam || userTeam === teams.home) return true;
  return teams.allowed.includes(userTeam);
}

/** The person's team as the event names it (Slack Connect events carry it; plain ones may not). */
export function userTeamOf(event: { user_team?: string | undefined; team?: string | undefined }): string | undefined {
  return event.user_team ?? event.team;
}

/** What the refused person is told (only them: an ephemeral message). */
export function foreignTeamText(userTeam: string): string {
  return `This Patchbay takes requests only from its own Slack workspace. Your organisation (${userTeam}) is not on its list: ask the person who runs it to add ${userTeam} to SLACK_ALLOWED_TEAMS.`;
}

/** Parses SLACK_ALLOWED_TEAMS: comma-separated team ids (T…). */
export function parseAllowedTeams(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}

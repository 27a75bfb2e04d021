import { isIP } from 'node:net';
import type { Config } from '../config.ts';
import type { DoctorRow } from './doctor-checks.ts';

/** Who can reach an address: only this machine, only its network, or the internet. */
export type Reach = 'this machine' | 'this network' | 'the internet';

/** Where PUBLIC_URL's host can be reached from, by its name or address alone (no lookup). */
export function reachOf(publicUrl: string): Reach {
  const host = new URL(publicUrl).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host === '::1' || host === '0.0.0.0')
    return 'this machine';
  if (isIP(host) === 4) {
    const [a, b] = host.split('.').map(Number) as [number, number];
    if (a === 127) return 'this machine';
    if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254))
      return 'this network';
    return 'the internet';
  }
  if (isIP(host) === 6) return /^(fc|fd|fe8|fe9|fea|feb)/.test(host) ? 'this network' : 'the internet';
  if (!host.includes('.') || /\.(local|internal|lan|home\.arpa|corp)$/.test(host)) return 'this network';
  return 'the internet';
}

/** One surface's events: whether they can arrive, and how. */
type Route = { surface: string; arrives: boolean; how: string };

function slackRoute(config: Config, reach: Reach): Route | undefined {
  if (!config.slack) return undefined;
  if (config.slack.appToken) return { surface: 'Slack', arrives: true, how: 'by Socket Mode (no public URL needed)' };
  const https = config.publicUrl.startsWith('https://');
  const arrives = reach === 'the internet' && https;
  return {
    surface: 'Slack',
    arrives,
    how: arrives
      ? `by HTTP at ${config.publicUrl}/slack/events`
      : `cannot arrive: Slack posts events to a public https URL, and ${config.publicUrl} is ${https ? `reachable from ${reach} only` : 'not https'}`,
  };
}

function githubRoute(config: Config, reach: Reach): Route | undefined {
  const github = config.github;
  if (!github) return undefined;
  if (github.events.mode === 'polling')
    return {
      surface: 'GitHub',
      arrives: true,
      how: `by polling every ${github.events.pollIntervalMs / 1000} s: mentions in issue, pull request and review comments, and CI of Patchbay's own pull requests (not reviews, the trigger label, or pushes to and closes of its pull requests)`,
    };
  // A GitHub Enterprise Server inside the network can reach an address on it; github.com cannot.
  const enterprise = !/^https:\/\/api\.github\.com$/.test(github.apiUrl);
  const arrives = reach === 'the internet' || (reach === 'this network' && enterprise);
  return {
    surface: 'GitHub',
    arrives,
    how: arrives
      ? `by webhooks at ${config.publicUrl}/github/webhooks${reach === 'this network' ? ' (if your GitHub Enterprise Server reaches it)' : ''}`
      : `webhooks cannot arrive: GitHub posts them to PUBLIC_URL, and ${config.publicUrl} is reachable from ${reach} only`,
  };
}

function linearRoute(config: Config, reach: Reach): Route | undefined {
  if (!config.linear) return undefined;
  const arrives = reach === 'the internet';
  return {
    surface: 'Linear',
    arrives,
    how: arrives
      ? `by webhooks at ${config.publicUrl}/linear/webhooks`
      : `webhooks cannot arrive: Linear posts them to PUBLIC_URL, and ${config.publicUrl} is reachable from ${reach} only`,
  };
}

/**
 * `patchbay doctor`'s events row: for each configured surface, whether its events can reach this
 * Patchbay as configured (Socket Mode and polling need no public URL; webhooks need PUBLIC_URL to
 * be reachable by the service), judged from the configuration alone. Red when any cannot arrive.
 */
export function eventRoutes(config: Config): DoctorRow | undefined {
  const reach = reachOf(config.publicUrl);
  const routes = [slackRoute(config, reach), githubRoute(config, reach), linearRoute(config, reach)].filter(
    (r): r is Route => r !== undefined,
  );
  if (routes.length === 0) return undefined;
  const detail = routes.map((r) => `${r.surface} ${r.how}`).join('; ');
  const blocked = routes.filter((r) => !r.arrives).map((r) => r.surface);
  if (blocked.length === 0) return { check: 'events', ok: true, detail };
  const fixes = [
    blocked.includes('Slack') && 'Slack: use Socket Mode (SLACK_APP_TOKEN)',
    blocked.includes('GitHub') && 'GitHub: set GITHUB_EVENTS=polling',
    'or set PUBLIC_URL to an https address these services reach (README, "What must be public")',
  ].filter(Boolean);
  return { check: 'events', ok: false, detail, fix: fixes.join('; ') };
}

import type { BotIdentity } from './github-client.ts';

// How a comment addresses the App: a mention, `@bot stop`, `@bot autofix off|on`; and who is a bot.

/** `@bot stop` (or cancel), alone in a comment. */
export function isStopRequest(text: string, bot: BotIdentity): boolean {
  const slug = bot.slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const rest = text
    .replace(new RegExp(`@${slug}(?![\\w-])`, 'gi'), '')
    .trim()
    .toLowerCase();
  return /^(stop|cancel)( please)?[.!]?$/.test(rest);
}

/** `@bot autofix off` / `on`, alone in a comment: undefined when the comment says something else. */
export function autofixRequest(text: string, bot: BotIdentity): boolean | undefined {
  const slug = bot.slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const rest = text
    .replace(new RegExp(`@${slug}(?![\\w-])`, 'gi'), '')
    .trim()
    .toLowerCase();
  const m = /^autofix (off|on)[.!]?$/.exec(rest);
  return m ? m[1] === 'on' : undefined;
}

/** Whether `text` mentions the bot (`@slug`, not `@slug-other` or `x@slug`). */
export function mentions(text: string | null | undefined, bot: BotIdentity): boolean {
  if (!text) return false;
  const slug = bot.slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w@/-])@${slug}(?![\\w-])`, 'i').test(text);
}

/** Whether a user is a bot or the App itself (its own comments and reviews are never requests). */
export function isBot(user: { login: string; type?: string | undefined }, bot: BotIdentity): boolean {
  return user.type === 'Bot' || user.login.toLowerCase() === bot.login.toLowerCase() || user.login.endsWith('[bot]');
}

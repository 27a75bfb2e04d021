import { LogLevel, type Logger as SlackLogger } from '@slack/web-api';
import type { Logger } from 'pino';

/** Slack's SDK logger interface over pino (the SDKs would otherwise write to the console). */
export function slackLogger(log: Logger): SlackLogger {
  const child = log.child({ component: 'slack-sdk' });
  let level = LogLevel.INFO;
  const join = (msg: unknown[]) => msg.map((m) => (typeof m === 'string' ? m : JSON.stringify(m))).join(' ');
  return {
    debug: (...msg) => child.debug(join(msg)),
    info: (...msg) => child.info(join(msg)),
    warn: (...msg) => child.warn(join(msg)),
    error: (...msg) => child.error(join(msg)),
    setLevel: (l) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}

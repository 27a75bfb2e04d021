import type { EventOf } from './events.ts';

/** What a thread is told, once per run, when the model service fails in a way that passes and the run waits for it. */
export function modelWaitNotice(event: EventOf<'model-waiting'>): string {
  return `${whatHappened(event.code)} (${event.message}). I am waiting for it and will carry on where I was; nothing is lost.`;
}

function whatHappened(code: string): string {
  switch (code) {
    case 'model_overloaded':
      return 'The model service is overloaded right now';
    case 'model_rate_limited':
      return "The model service's rate limit is reached for now";
    case 'timeout':
      return 'The model service is slow to answer';
    case 'model_stream_cut':
      return "The model's answer was cut off before its end";
    default:
      return 'The model service is unavailable right now';
  }
}

import type { ModelMessage, TurnError } from '../models/model-provider.ts';
import { dropImage, fitRequestImages } from '../models/request-images.ts';
import type { RunState } from './run-state.ts';
import { clip } from './transcript-text.ts';

/**
 * Before a model turn: the transcript within what one request may carry in pictures (the oldest
 * past the count, any whose side breaks the rule for that count, each replaced by a note). The
 * change is saved to the log, so the stored transcript is the one the model was sent.
 */
export async function fitTranscriptImages(run: RunState): Promise<void> {
  const fitted = fitRequestImages(run.messages);
  if (fitted.dropped === 0) return;
  await saveTranscript(run, [...fitted.messages]);
  run.input.log.info({ dropped: fitted.dropped }, 'pictures dropped from the transcript to fit the request limits');
}

/**
 * The model's API refused a request for one of its pictures: that picture leaves the transcript
 * (a note says it was there and why it went), so no later turn sends it again.
 */
export async function dropRefusedImage(run: RunState, error: TurnError & { refusedImage: number }): Promise<void> {
  const reason = `because the model's API refused it (${clip(error.message, 300)})`;
  await saveTranscript(run, dropImage(run.messages, error.refusedImage, reason));
}

/** Same messages, same places: each keeps the user-message event it consumed. */
async function saveTranscript(run: RunState, messages: ModelMessage[]): Promise<void> {
  const entries = messages.map((message, i) => ({ message, eventSeq: run.seqs[i] ?? null }));
  await run.input.runLog.replaceTranscript(run.input.sessionId, entries, []);
  run.messages.splice(0, run.messages.length, ...messages);
}

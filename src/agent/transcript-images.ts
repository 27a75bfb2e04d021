import type { PictureFitter } from '../core/image-format.ts';
import type { ModelImage, ModelMessage, TurnError } from '../models/model-provider.ts';
import { dropImage, fitRequestImages, mapImages, maxSideFor } from '../models/request-images.ts';
import type { RunState } from './run-state.ts';
import { clip } from './transcript-text.ts';

/**
 * Before a model turn: the transcript within what one request may carry in pictures, counting
 * them all. A picture whose side breaks the rule for that count (8000 px; 2000 px past 20
 * pictures: one stored before pictures were scaled as they came in) is scaled when the run has a
 * fitter; what still does not fit (the oldest past 100 pictures, one that cannot be scaled) is
 * replaced by a note. A change is saved to the log, so the stored transcript is the one sent.
 */
export async function fitTranscriptImages(run: RunState): Promise<void> {
  const side = maxSideFor(run.messages);
  const fitter = run.input.pictures;
  const scaled = fitter
    ? await mapImages(run.messages, (image) =>
        sideOf(image) > side ? scaleImage(image, fitter) : Promise.resolve(image),
      )
    : run.messages;
  const fitted = fitRequestImages(scaled);
  if (fitted.messages === run.messages) return;
  await saveTranscript(run, [...fitted.messages]);
  run.input.log.info({ dropped: fitted.dropped }, 'pictures scaled or dropped to fit the request limits');
}

const sideOf = (image: ModelImage) => Math.max(image.width ?? 0, image.height ?? 0);

/** The picture scaled by the fitter; as it was when it cannot be (it is then dropped with a note). */
async function scaleImage(image: ModelImage, fitter: PictureFitter): Promise<ModelImage> {
  const fitted = await fitter.fit(Buffer.from(image.data, 'base64'), image.mediaType);
  if ('unfit' in fitted) return image;
  const { bytes, ...size } = fitted;
  return { ...image, ...size, data: Buffer.from(bytes).toString('base64') };
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

import type { RunOutcome } from '../agent/agent-runner.ts';
import type { UserMessageEvent } from '../agent/run-state.ts';
import { quoteMessage, taskMessage } from '../agent/transcript-text.ts';
import type { PendingQuestion } from '../core/session-record.ts';
import { type CliEngineName, EngineResume, type EngineRunInput } from './engine.ts';

/** Where an engine run starts: the engine's own session to resume, what to tell it, and the turn count so far. */
export type EngineStart = {
  resume: EngineResume | undefined;
  /** People's messages the engine has not seen, as one prompt; empty when there are none. */
  prompt: string;
  /** Every person's message of the session, quoted: the prompt of a fresh start when the engine's session is lost. */
  history: string;
  /** The number of assistant turns already in the log (events' turn numbers go on from here). */
  firstTurn: number;
  /** The messages to record as read once the engine has them, each as the engine reads it. */
  unread: { event: UserMessageEvent; text: string }[];
};

/** Reads the session's transcript and unread messages: what an engine run resumes and is told. Must not be called twice for one run. */
export async function openEngineRun(input: EngineRunInput, engine: CliEngineName): Promise<EngineStart> {
  const { runLog, sessionId } = input;
  const entries = await runLog.transcript(sessionId);
  const consumed = Math.max(0, ...entries.map((e) => e.eventSeq ?? 0));
  const resume = entries
    .flatMap((e) => (e.message.role === 'assistant' ? [EngineResume.safeParse(e.message.providerState)] : []))
    .filter((r) => r.success && r.data.engine === engine)
    .at(-1)?.data;
  const all = (await runLog.events(sessionId, { types: ['user-message'] })) as UserMessageEvent[];
  const first = entries.length === 0;
  const unread = all
    .filter((e) => e.seq > consumed)
    .map((event, i) => ({ event, text: first && i === 0 ? taskMessage(event) : quoteMessage(event) }));
  const history = all.map((e, i) => (i === 0 ? taskMessage(e) : quoteMessage(e))).join('\n\n');
  // A run that handed the engine messages and ended without its answer (its worker stopped) goes on
  // from there: in the engine's own session when there is one to resume, else in a fresh one that
  // gets the whole thread first (the interrupted session's id was never recorded).
  const interrupted = unread.length === 0 && entries.at(-1)?.message.role === 'user';
  const prompt = interrupted
    ? resume
      ? INTERRUPTED
      : `${history}\n\n${INTERRUPTED}`
    : unread.map((u) => u.text).join('\n\n');
  const usage = await runLog.events(sessionId, { types: ['usage'] });
  const turns = usage.map((e) => (e.event.type === 'usage' ? e.event.turn + 1 : 0));
  const firstTurn = Math.max(entries.filter((e) => e.message.role === 'assistant').length, ...turns);
  return { resume, prompt, history, firstTurn, unread };
}

const INTERRUPTED =
  'Your previous run was interrupted before it ended (Patchbay restarted it). Go on with the task from where it stopped: check the workspace for what is already done, and do not repeat it.';

/** Records the messages the engine was given as read (in the transcript, with their events' seqs). */
export async function recordGiven(input: EngineRunInput, start: EngineStart): Promise<void> {
  if (start.unread.length === 0) return;
  await input.runLog.commitStep(input.sessionId, {
    messages: start.unread.map((u) => ({ message: { role: 'user' as const, content: u.text }, eventSeq: u.event.seq })),
  });
}

/** Records the engine's last answer with its own session's id, so the next run resumes that session. */
export async function recordEngineTurn(
  input: EngineRunInput,
  resume: EngineResume | undefined,
  summary: string,
): Promise<void> {
  await input.runLog.commitStep(input.sessionId, {
    messages: [{ message: { role: 'assistant', content: summary, ...(resume && { providerState: resume }) } }],
  });
}

/** The instruction every engine gets for asking: a last line `QUESTION: …` ends the run waiting for the thread. */
export const engineAskGuidance =
  'When you need a decision only the person who asked can make, stop working and end your answer with one line that starts with "QUESTION: " followed by the question. Their answer will come back to you in this session.';

/** The question an engine's final answer ends with (see engineAskGuidance), if any. Pure. */
export function engineQuestion(text: string): string | undefined {
  return /^QUESTION:[ \t]*(\S.*)$/m.exec(text.trim().split('\n').at(-1) ?? '')?.[1]?.trim();
}

/** Puts the engine's question to the thread: the session waits, and the answer resumes the engine's session. */
export async function askFromEngine(input: EngineRunInput, question: string, key: string): Promise<RunOutcome> {
  const questionId = `engine-question:${key}`;
  const pending: PendingQuestion = { questionId, toolCallId: questionId, question };
  await input.runLog.commitStep(input.sessionId, {
    events: [{ event: { type: 'question-asked', questionId, question }, dedupeKey: `question:${questionId}` }],
    patch: { pendingQuestion: pending },
  });
  return { kind: 'waiting', question: pending };
}

/** Splits a byte stream into lines, calling `onLine` for each complete one. */
export function lineSplitter(onLine: (line: string) => void): { push(chunk: Uint8Array): void; end(): void } {
  const decoder = new TextDecoder();
  let buffered = '';
  return {
    push(chunk) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl = buffered.indexOf('\n');
      while (nl >= 0) {
        onLine(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
        nl = buffered.indexOf('\n');
      }
    },
    end() {
      buffered += decoder.decode();
      if (buffered.trim()) onLine(buffered);
      buffered = '';
    },
  };
}

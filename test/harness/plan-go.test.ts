import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { answerPlan, planApproved, planQuestionCall } from '../../src/harness/plan-first.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const alice: Actor = { source: 'slack', id: 'U0ALICE01', name: 'Alice Doe' };
const bob: Actor = { source: 'slack', id: 'U0BOB0002', name: 'Bob Roe' };
const writer: Actor = { source: 'github', id: '7', name: 'carol', githubLogin: 'carol' };

/**
 * Who gives a plan-first session its go, and with which words (issue 35): the requester's "go"
 * (or one from a surface that checked write access) unlocks the tools; anyone else's "go" and a
 * negated go are messages the agent reads. The real store on PostgreSQL, as a resumed run reads it.
 */
describe("a plan's go", () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;
  beforeAll(async () => {
    database = await createTestDatabase();
    store = createSessionStore(database.db);
  });
  afterAll(() => database?.close());

  /** A Slack session of Alice's, waiting on its plan as askForGo leaves it. */
  async function waitingOnPlan(): Promise<string> {
    const id = randomUUID();
    const thread = {
      source: 'slack' as const,
      teamId: 'T1',
      channel: 'C1',
      threadTs: `${Date.now()}.${id.slice(0, 6)}`,
    };
    await store.create({
      id,
      repo: 'https://github.com/acme/widgets',
      prompt: 'add notes',
      title: 'add notes',
      autonomy: 'plan-first',
      requester: alice,
      thread,
    });
    await store.transition(id, 'start');
    const question = { questionId: 'plan:1', question: 'Plan: add NOTES.md', choices: ['Go'] };
    await store.transition(id, 'ask', {
      patch: { pendingQuestion: { ...question, toolCallId: planQuestionCall } },
      events: [{ event: { type: 'question-asked', ...question } }],
    });
    return id;
  }

  /** A reply in the thread, then the resumed run reading it. */
  async function reply(id: string, actor: Actor, text: string) {
    await store.transition(id, 'enqueue', { events: [{ event: { type: 'user-message', actor, text } }] });
    await store.transition(id, 'start');
    await answerPlan(store, id);
    const session = await store.get(id);
    return { approved: await planApproved(store, id), pendingQuestion: session?.pendingQuestion ?? null };
  }

  it('is given by the requester', async () => {
    expect(await reply(await waitingOnPlan(), alice, 'go ahead')).toEqual({ approved: true, pendingQuestion: null });
  });

  it("is not given by someone else in the Slack thread: Bob's go is feedback", async () => {
    const id = await waitingOnPlan();
    expect(await reply(id, bob, 'go')).toEqual({ approved: false, pendingQuestion: null });
    expect((await store.events(id, { types: ['question-answered'] })).map((e) => e.event)).toMatchObject([
      { questionId: 'plan:1', actor: bob, text: 'go' },
    ]);
  });

  it('is given by a person whose write access GitHub checked', async () => {
    expect((await reply(await waitingOnPlan(), writer, 'LGTM')).approved).toBe(true);
  });

  it.each(["don't go", 'do not go', 'no go', 'not yet, go later', "Don't go ahead."])(
    'is not %j from the requester',
    async (text) => {
      expect(await reply(await waitingOnPlan(), alice, text)).toEqual({ approved: false, pendingQuestion: null });
    },
  );
});

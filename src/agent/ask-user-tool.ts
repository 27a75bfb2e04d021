import { z } from 'zod';
import type { Tool } from './tool.ts';

const AskUserInput = z
  .object({
    question: z
      .string()
      .trim()
      .min(1)
      .describe('The question, self-contained: the user may read it hours later in a chat thread.'),
    choices: z
      .array(z.string().trim().min(1))
      .min(2)
      .max(10)
      .optional()
      .describe('Options to pick from, when the answer is one of a few.'),
    recommended: z
      .string()
      .optional()
      .describe('The option you would pick and will assume if asked to decide; one of choices when choices are given.'),
  })
  .refine(
    (input) =>
      input.recommended === undefined || input.choices === undefined || input.choices.includes(input.recommended),
    {
      message: 'recommended must be one of choices',
      path: ['recommended'],
    },
  );
type AskUserInput = z.infer<typeof AskUserInput>;

/**
 * Asks the people in the session's thread. The run pauses (session waiting) and the answer comes
 * back later as this call's result; the tool itself only hands the question to the runner.
 */
export function createAskUserTool(): Tool<AskUserInput> {
  return {
    name: 'ask_user',
    description:
      'Ask the user a question when you need a decision you cannot make from the code: ambiguous requirements, ' +
      'a choice between designs, missing access. The run pauses until they answer. Do not ask for things you can find out yourself.',
    inputSchema: AskUserInput,
    async execute(input) {
      return {
        content: 'Question sent; waiting for an answer.',
        control: {
          kind: 'ask',
          question: input.question,
          ...(input.choices ? { choices: input.choices } : {}),
          ...(input.recommended !== undefined ? { recommended: input.recommended } : {}),
        },
      };
    },
  };
}

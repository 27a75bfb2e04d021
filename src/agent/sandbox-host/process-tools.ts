import { z } from 'zod';
import { gateCommand } from '../command-gate.ts';
import { checkCommand, type CommandPolicy } from '../command-policy.ts';
import type { Tool, ToolOutput } from '../tool.ts';
import { callHost, MAX_BACKGROUND_PROCESSES, type HostAnswer } from './process-host.ts';

const ProcessStartInput = z.object({
  command: z.string().min(1).describe('The command line (sh -c, in the workspace root), e.g. `npm run dev`.'),
  port: z
    .number()
    .int()
    .min(1)
    .max(65535)
    .optional()
    .describe('A port on 127.0.0.1 it listens on: the call waits until it answers there.'),
  waitSeconds: z.number().int().min(1).max(300).optional().describe('How long to wait for the port (default 60).'),
});
type ProcessStartInput = z.infer<typeof ProcessStartInput>;

const ProcessIdInput = z.object({
  id: z
    .string()
    .regex(/^p\d+$/)
    .describe('The id process_start gave, e.g. p1.'),
});
const ProcessOutputInput = ProcessIdInput.extend({
  since: z.number().int().min(0).optional().describe('Output from this byte on (the `next` of an earlier call).'),
});

/** The answer for the model: the host's result as readable lines, or its refusal. */
function said(answer: HostAnswer, lines: (result: Record<string, unknown>) => string[]): ToolOutput {
  if (answer.kind === 'refused') return { content: answer.message, isError: true };
  return { content: lines(answer.result).join('\n') };
}

const line = (result: Record<string, unknown>) =>
  `${String(result.id)} ${result.running ? 'running' : `ended (exit ${String(result.exitCode)})`}: ${String(result.command)}`;

/**
 * `process_start`: a process that keeps running after the call (a dev server, a database, a
 * watcher), in the sandbox's process host, where the browser tools reach it. The command meets the
 * same gate as run_shell's before anything runs.
 */
export function createProcessStartTool(options: { policy?: CommandPolicy | undefined } = {}): Tool<ProcessStartInput> {
  const policy = options.policy ?? checkCommand;
  return {
    name: 'process_start',
    description:
      `Start a background process in the sandbox that keeps running across calls (a dev server, a database, a watcher), at most ${MAX_BACKGROUND_PROCESSES} at once. ` +
      'Give `port` to wait until it answers on 127.0.0.1:PORT. The browser_* tools reach it; run_shell commands do not (each has its own network). ' +
      'Read its output with process_output, end it with process_stop; all end when the run ends.',
    inputSchema: ProcessStartInput,
    timeLimitMs: (input) => ((input.waitSeconds ?? 60) + 60) * 1000,
    async execute(input, ctx) {
      const gate = await gateCommand(input.command, ctx, policy, 'Command');
      if (gate.kind === 'held') return gate.output;
      const waitSeconds = input.waitSeconds ?? 60;
      const answer = await callHost(
        ctx.sandbox,
        { op: 'start', command: input.command, port: input.port, waitSeconds },
        { signal: ctx.signal, timeoutMs: (waitSeconds + 40) * 1000 },
      );
      const failed = answer.kind === 'done' && answer.result.reason !== undefined;
      const output = said(answer, (r) => [
        r.reason ? `${line(r)}; port ${input.port} ${String(r.reason)}.` : `Started ${line(r)}`,
        ...(input.port && !r.reason ? [`It answers on http://127.0.0.1:${input.port}/`] : []),
        `Output so far:\n${String(r.output ?? '')}`,
      ]);
      return failed ? { ...output, isError: true } : output;
    },
  };
}

/** `process_output`: what a background process printed (stdout and stderr together), from a byte on. */
export function createProcessOutputTool(): Tool<z.infer<typeof ProcessOutputInput>> {
  return {
    name: 'process_output',
    description: 'Read what a background process printed (stdout and stderr, the last 256 KiB kept).',
    inputSchema: ProcessOutputInput,
    async execute(input, ctx) {
      const answer = await callHost(
        ctx.sandbox,
        { op: 'output', id: input.id, since: input.since ?? 0 },
        {
          signal: ctx.signal,
          timeoutMs: 30_000,
        },
      );
      return said(answer, (r) => [
        line(r),
        ...(Number(r.skipped) > 0 ? [`(${String(r.skipped)} earlier bytes are no longer kept)`] : []),
        `Output (next: ${String(r.next)}):\n${String(r.text)}`,
      ]);
    },
  };
}

/** `process_stop`: ends a background process and everything it started. */
export function createProcessStopTool(): Tool<z.infer<typeof ProcessIdInput>> {
  return {
    name: 'process_stop',
    description: 'Stop a background process (and its children).',
    inputSchema: ProcessIdInput,
    async execute(input, ctx) {
      const answer = await callHost(
        ctx.sandbox,
        { op: 'stop', id: input.id },
        { signal: ctx.signal, timeoutMs: 30_000 },
      );
      return said(answer, (r) => [`Stopped. ${line(r)}`, `Its last output:\n${String(r.output ?? '')}`]);
    },
  };
}

/** `process_list`: the background processes of this run, and whether the browser is open. */
export function createProcessListTool(): Tool<Record<string, never>> {
  return {
    name: 'process_list',
    description: 'List the background processes started in this run, and whether the browser is open.',
    inputSchema: z.object({}).strict(),
    async execute(_input, ctx) {
      const answer = await callHost(ctx.sandbox, { op: 'list' }, { signal: ctx.signal, timeoutMs: 30_000 });
      return said(answer, (r) => {
        const listed = z.array(z.record(z.string(), z.unknown())).catch([]).parse(r.processes);
        return [
          ...(listed.length === 0 ? ['No background processes.'] : listed.map(line)),
          `Browser: ${r.browser ? 'open' : 'not open'}`,
        ];
      });
    },
  };
}

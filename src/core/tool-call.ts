/**
 * What a tool call does, in the words every surface shows it with (Slack's status line, GitHub's
 * progress comment, the CLI, Linear's action activities, the web page's timeline): the verb for
 * the tool and the first line of its main argument (the command, path, query, pattern, question or URL).
 */
export type ToolCallDescription = {
  /** The tool's name as the model called it (`run_shell`). */
  name: string;
  /** A past-tense verb for the step (`Ran`, `Read`); the tool's name for tools without one. */
  action: string;
  /** The main argument's first line, clipped to `maxDetail` characters with `…`; '' when there is none. */
  detail: string;
};

const actions: Record<string, string> = {
  run_shell: 'Ran',
  read_file: 'Read',
  write_file: 'Wrote',
  edit_file: 'Edited',
  list_files: 'Listed',
  search: 'Searched',
  git_status: 'Git status',
  git_diff: 'Git diff',
  screenshot: 'Screenshot',
  process_start: 'Started',
  process_output: 'Read the output of',
  process_stop: 'Stopped',
  process_list: 'Listed processes',
  browser_open: 'Opened',
  browser_snapshot: 'Read the page',
  browser_click: 'Clicked',
  browser_type: 'Typed into',
  browser_select: 'Selected in',
  browser_wait_for: 'Waited for',
  browser_console: 'Read the console',
  browser_screenshot: 'Screenshot',
  ask_user: 'Asked',
  spawn_subtasks: 'Started sub-tasks',
  merge_subtasks: 'Merged sub-tasks',
};

const detailFields = [
  'command',
  'path',
  'query',
  'pattern',
  'question',
  'url',
  'ref',
  'id',
  'text',
  'selector',
] as const;

export function describeToolCall(
  name: string,
  input: unknown,
  options: { maxDetail?: number } = {},
): ToolCallDescription {
  const fields = typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {};
  const main = detailFields.map((k) => fields[k]).find((v): v is string => typeof v === 'string') ?? '';
  const line = main.trim().split('\n')[0] ?? '';
  const max = options.maxDetail ?? 200;
  return { name, action: actions[name] ?? name, detail: line.length > max ? `${line.slice(0, max - 1)}…` : line };
}

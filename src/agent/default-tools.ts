import { createAskUserTool } from './ask-user-tool.ts';
import type { CommandPolicy } from './command-policy.ts';
import { createEditFileTool } from './edit-file-tool.ts';
import { createGitDiffTool } from './git-diff-tool.ts';
import { createGitStatusTool } from './git-status-tool.ts';
import { createListFilesTool } from './list-files-tool.ts';
import { createReadFileTool } from './read-file-tool.ts';
import { createScreenshotTool } from './screenshot-tool.ts';
import { createBrowserTools } from './sandbox-host/browser-tools.ts';
import {
  createProcessListTool,
  createProcessOutputTool,
  createProcessStartTool,
  createProcessStopTool,
} from './sandbox-host/process-tools.ts';
import { createSearchTool } from './search-tool.ts';
import { createShellTool } from './shell-tool.ts';
import { createSpawnSubtasksTool } from './spawn-subtasks-tool.ts';
import type { AnyTool } from './tool.ts';
import { createWriteFileTool } from './write-file-tool.ts';

export type DefaultToolsOptions = {
  /** Shell command policy; defaults to checkCommand. */
  policy?: CommandPolicy;
  shellTimeoutMs?: number;
  maxShellTimeoutMs?: number;
  /** Per-tool output cap in characters (the registry caps again). */
  maxOutputChars?: number;
  searchMaxResults?: number;
  /** Leave ask_user out, for runs nobody can answer (for example scheduled checks). */
  withoutAskUser?: boolean;
  /** With spawn_subtasks, at most this many sub-tasks per call (SUBTASKS_MAX); absent: no such tool. */
  subtasksMax?: number;
};

/** The standard coding tool set. */
export function createDefaultTools(options: DefaultToolsOptions = {}): AnyTool[] {
  const { maxOutputChars } = options;
  const tools: AnyTool[] = [
    createReadFileTool({ maxOutputChars }),
    createWriteFileTool(),
    createEditFileTool(),
    createListFilesTool(),
    createSearchTool({ maxResults: options.searchMaxResults, maxOutputChars }),
    createShellTool({
      policy: options.policy,
      timeoutMs: options.shellTimeoutMs,
      maxTimeoutMs: options.maxShellTimeoutMs,
      maxOutputChars,
    }),
    createGitStatusTool(),
    createGitDiffTool(),
    createScreenshotTool({ policy: options.policy }),
    createProcessStartTool({ policy: options.policy }),
    createProcessOutputTool(),
    createProcessStopTool(),
    createProcessListTool(),
    ...createBrowserTools(),
  ];
  if (!options.withoutAskUser) tools.push(createAskUserTool());
  if (options.subtasksMax !== undefined) tools.push(createSpawnSubtasksTool({ max: options.subtasksMax }));
  return tools;
}

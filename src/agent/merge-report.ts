import type { SubtaskLine } from '../core/subtasks.ts';
import type { MergedFile, MergeOutcome, WorkspaceBlock } from './workspace-merge.ts';

/** One sub-task's merge as merge_subtasks reports it. */
export type Step = { line: SubtaskLine; commit: string; outcome: MergeOutcome };

const continueHow =
  'To continue: edit those files to resolve the conflict markers, `git add` them, then `git commit --no-edit` ' +
  '(it records the merge), and call merge_subtasks again to merge the rest. ' +
  'To drop this merge instead: `git merge --abort`.';

/** Every merge went through (or was in HEAD already): what each brought. */
export function mergedText(steps: Step[]): string {
  const merged = steps.filter((s) => s.outcome.kind === 'merged').length;
  const head = `Merged ${merged} of ${steps.length} sub-task branch${steps.length === 1 ? '' : 'es'}.`;
  return [head, ...steps.map(stepText)].join('\n');
}

/** The last step left a conflict: what merged before it, the conflicted files, how to go on, what is left. */
export function conflictText(steps: Step[], files: string[], rest: SubtaskLine[]): string {
  const done = steps.slice(0, -1);
  const last = steps.at(-1);
  const parts = done.length > 0 ? [mergedText(done), ''] : [];
  parts.push(
    `${last ? describe(last.line) : 'The merge'} conflicts in ${files.length} file${files.length === 1 ? '' : 's'}, ` +
      'left in the workspace as git left it (MERGE_HEAD set, markers in the files):',
    ...files.map((file) => `  ${file}`),
    continueHow,
  );
  parts.push(pendingText(rest));
  return parts.join('\n');
}

/** Git refused the last step without starting it (nothing changed by it): why, and what is left. */
export function refusedText(steps: Step[], rest: SubtaskLine[]): string {
  const done = steps.slice(0, -1);
  const last = steps.at(-1);
  const reason = last?.outcome.kind === 'refused' ? last.outcome.reason : 'unknown';
  const parts = done.length > 0 ? [mergedText(done), ''] : [];
  parts.push(`${last ? describe(last.line) : 'The merge'} was not merged: git refused: ${reason}`);
  parts.push(pendingText(last ? [last.line, ...rest] : rest));
  return parts.join('\n');
}

/** Why no merge started: the workspace is not ready for one. */
export function workspaceBlockText(block: WorkspaceBlock): string {
  switch (block.kind) {
    case 'merge-open':
      return block.conflicted.length > 0
        ? `A merge is still open with conflicts in: ${block.conflicted.join(', ')}. ${continueHow}`
        : 'A merge is still open, its conflicts resolved but not committed: `git commit --no-edit` records it; then call merge_subtasks again.';
    case 'dirty':
      return (
        `Nothing merged: the workspace has uncommitted changes (${block.files.slice(0, 20).join(', ')}${block.files.length > 20 ? ', …' : ''}). ` +
        'Commit them first (`git add -A && git commit -m "…"`), then call merge_subtasks again.'
      );
    default: {
      const never: never = block;
      return never;
    }
  }
}

/** The sub-tasks still to merge, by name and branch. */
export function pendingText(rest: SubtaskLine[]): string {
  if (rest.length === 0) return 'No other sub-task branch is waiting to be merged.';
  return `Not merged yet: ${rest.map((line) => `${describe(line)} on ${line.branch ?? '(no branch)'}`).join('; ')}.`;
}

function stepText(step: Step): string {
  const { line, outcome } = step;
  const what = `- ${describe(line)}, branch ${line.branch}, commit ${step.commit.slice(0, 12)}`;
  switch (outcome.kind) {
    case 'merged':
      return `${what}: merged as ${outcome.commit.slice(0, 12)}, ${filesSummary(outcome.files)}`;
    case 'already-merged':
      return `${what}: already in HEAD (merged before)`;
    case 'conflict':
      return `${what}: conflicts in ${outcome.files.join(', ')}`;
    case 'refused':
      return `${what}: not merged (${outcome.reason})`;
    default: {
      const never: never = outcome;
      return never;
    }
  }
}

function filesSummary(files: MergedFile[]): string {
  if (files.length === 0) return 'no file changes';
  const added = files.reduce((sum, f) => sum + f.additions, 0);
  const deleted = files.reduce((sum, f) => sum + f.deletions, 0);
  const list = files
    .slice(0, 50)
    .map((f) => `    ${f.path} +${f.additions} -${f.deletions}`)
    .join('\n');
  const more = files.length > 50 ? `\n    … and ${files.length - 50} more` : '';
  return `${files.length} file${files.length === 1 ? '' : 's'}, +${added} -${deleted}:\n${list}${more}`;
}

function describe(line: SubtaskLine): string {
  return `Sub-task ${line.index} "${line.title}"`;
}

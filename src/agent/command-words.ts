import type { ShellWord, SimpleCommand } from './shell-parser.ts';

/**
 * The command a simple command really runs, once assignments (`FOO=1 cmd`), reserved words
 * (`! { if then do …`) and transparent wrappers (`env`, `nohup`, `timeout 5`, `xargs -0`, `sudo`…)
 * are stripped. `elevated` says a privilege wrapper (sudo, doas, su…) was seen on the way.
 */
export type EffectiveCommand = {
  name: string;
  args: string[];
  words: ShellWord[];
  elevated: string | undefined;
};

const RESERVED = new Set(['!', '{', '}', 'if', 'then', 'elif', 'else', 'fi', 'do', 'done', 'while', 'until']);

/** Wrapper commands and the options of theirs that take a separate argument. */
const WRAPPERS: Record<string, { withValue: string[]; positional?: number }> = {
  env: { withValue: ['-u', '--unset', '-C', '--chdir'] },
  nohup: { withValue: [] },
  nice: { withValue: ['-n', '--adjustment'] },
  timeout: { withValue: ['-s', '--signal', '-k', '--kill-after'], positional: 1 },
  exec: { withValue: ['-a'] },
  command: { withValue: [] },
  builtin: { withValue: [] },
  stdbuf: { withValue: ['-i', '-o', '-e'] },
  ionice: { withValue: ['-c', '-n', '-p', '-t'] },
  setsid: { withValue: [] },
  time: { withValue: ['-f', '-o'] },
  xargs: {
    withValue: [
      '-I',
      '-i',
      '-n',
      '-P',
      '-L',
      '-l',
      '-d',
      '-E',
      '-e',
      '-a',
      '-s',
      '--max-args',
      '--max-procs',
      '--delimiter',
      '--arg-file',
    ],
  },
  sudo: {
    withValue: [
      '-u',
      '-g',
      '-C',
      '-D',
      '-h',
      '-p',
      '-r',
      '-t',
      '-U',
      '--user',
      '--group',
      '--chdir',
      '--host',
      '--prompt',
    ],
  },
  doas: { withValue: ['-u', '-C'] },
  pkexec: { withValue: ['--user'] },
  runuser: { withValue: ['-u', '-g', '-G', '--user', '--group'] },
};

const PRIVILEGE = new Set(['sudo', 'doas', 'pkexec', 'runuser']);

export function commandName(word: string): string {
  return word.slice(word.lastIndexOf('/') + 1);
}

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;

export function effectiveCommand(command: SimpleCommand): EffectiveCommand | undefined {
  let words = command.words;
  let elevated: string | undefined;
  for (;;) {
    const first = words[0];
    if (!first) return undefined;
    if (RESERVED.has(first.text) || ASSIGNMENT.test(first.text)) {
      words = words.slice(1);
      continue;
    }
    const name = commandName(first.text);
    const wrapper = WRAPPERS[name];
    // `command -v x` only looks x up; it runs nothing.
    if (name === 'command' && words.some((w) => w.text === '-v' || w.text === '-V')) return undefined;
    if (!wrapper) return { name, args: words.slice(1).map((w) => w.text), words, elevated };
    if (PRIVILEGE.has(name)) elevated ??= name;
    words = skipWrapper(words.slice(1), wrapper);
  }
}

function skipWrapper(words: ShellWord[], wrapper: { withValue: string[]; positional?: number }): ShellWord[] {
  let i = 0;
  while (i < words.length) {
    const text = words[i]!.text;
    if (text === '--') return words.slice(i + 1 + (wrapper.positional ?? 0));
    if (!text.startsWith('-') || text === '-') break;
    i += wrapper.withValue.includes(text) ? 2 : 1;
  }
  // env takes NAME=value pairs after its options; they are stripped as assignments by the caller.
  return words.slice(i + (wrapper.positional ?? 0));
}

/** Splits `-rf` style option clusters: true when a short option letter appears before `--`. */
export function hasShortFlag(args: string[], letters: string): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (/^-[A-Za-z0-9]+$/.test(arg) && [...letters].some((l) => arg.includes(l))) return true;
  }
  return false;
}

/** Arguments that are not options (everything after `--` counts as an operand). */
export function operands(args: string[]): string[] {
  const result: string[] = [];
  let afterDashes = false;
  for (const arg of args) {
    if (!afterDashes && arg === '--') afterDashes = true;
    else if (afterDashes || !arg.startsWith('-') || arg === '-') result.push(arg);
  }
  return result;
}

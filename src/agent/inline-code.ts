import { operands } from './command-words.ts';
import type { EffectiveCommand } from './command-words.ts';

/** Code an interpreter was given on its command line (`node -e`, `python -c`, `perl -e`, an awk program). */
export type InlineCode = { language: string; code: string };

/** What inline code may do that a person should see: start processes, or build code at run time. */
export type InlineRisk = {
  /** The first construct that starts a process or hides what runs, or undefined when there is none. */
  runs: string | undefined;
  /** Its string literals, each a command it might hand a shell (`execSync('git push -f')`). */
  literals: string[];
};

/** Options that take code as their value, per interpreter; clustered short flags end in the letter (`-ne`). */
const CODE_FLAGS: Array<{ name: RegExp; language: string; long: string[]; short: string }> = [
  { name: /^(node|nodejs|bun)$/, language: 'JavaScript', long: ['--eval', '--print'], short: 'ep' },
  { name: /^python[\d.]*$|^pypy[\d.]*$/, language: 'Python', long: [], short: 'c' },
  { name: /^perl[\d.]*$/, language: 'Perl', long: [], short: 'eE' },
  { name: /^ruby[\d.]*$/, language: 'Ruby', long: [], short: 'e' },
  { name: /^php[\d.]*$/, language: 'PHP', long: [], short: 'r' },
  { name: /^(lua|luajit)[\d.]*$/, language: 'Lua', long: [], short: 'e' },
  { name: /^(Rscript)$/, language: 'R', long: [], short: 'e' },
];

/**
 * The inline code a command runs, or undefined. Several `-e` options (perl, ruby) are joined, as
 * the interpreter joins them. `deno eval CODE` and awk's program text count too.
 */
export function inlineCode(command: EffectiveCommand): InlineCode | undefined {
  const { name, args } = command;
  if (name === 'deno' && args[0] === 'eval') return { language: 'JavaScript', code: operands(args.slice(1))[0] ?? '' };
  if (/^[gnm]?awk$/.test(name)) {
    if (args.some((a) => a === '-f' || a.startsWith('--file'))) return undefined;
    let i = 0;
    while (i < args.length && args[i]!.startsWith('-') && args[i] !== '--') i += /^-[vF]$/.test(args[i]!) ? 2 : 1;
    const program = args[args[i] === '--' ? i + 1 : i];
    return program === undefined ? undefined : { language: 'awk', code: program };
  }
  const interpreter = CODE_FLAGS.find((entry) => entry.name.test(name));
  if (!interpreter) return undefined;
  const pieces: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') break;
    const long = interpreter.long.find((flag) => arg === flag || arg.startsWith(`${flag}=`));
    if (long) {
      pieces.push(arg === long ? (args[++i] ?? '') : arg.slice(long.length + 1));
      continue;
    }
    if (/^-[A-Za-z]+$/.test(arg) && interpreter.short.includes(arg.at(-1)!)) pieces.push(args[++i] ?? '');
    // Python stops reading its own options at -c: what follows is the code's argv.
    if (pieces.length > 0 && interpreter.language === 'Python') break;
  }
  return pieces.length === 0 ? undefined : { language: interpreter.language, code: pieces.join('\n') };
}

/** Constructs that start a process, per language, or that hide what code runs (evaluated strings, decoding). */
const RUNS: Record<string, RegExp> = {
  JavaScript:
    /child_process|\b(execSync|execFileSync|spawnSync|spawn|execFile|exec|fork)\s*\(|process\.binding|_linkedBinding|Deno\.(run|Command)|Bun\.(spawn|\$)|\$`|\bFunction\s*\(|\beval\s*\(|\brequire\s*\(\s*[^'"`\s)]|\brequire\s*\([^)]*\+|\bimport\s*\(\s*[^'"`\s)]|\bvm\b|worker_threads|fromCharCode|\batob\s*\(|['"]base64['"]|\\x[0-9a-f]{2}|\\u[0-9a-f]{4}/i,
  Python:
    /subprocess|\bos\s*\.\s*(system|popen|exec\w*|spawn\w*|fork\w*|posix_spawn\w*)|\bpty\b|\bcommands\b|__import__|importlib|\b(exec|eval|compile|getattr)\s*\(|base64|codecs|\bctypes\b|\\x[0-9a-f]{2}|\bchr\s*\(/i,
  Perl: /`|\bqx\b|\b(system|exec|fork|open|eval|pack)\b|IPC::|\\x[0-9a-f]{2}|\bchr\s*\(/i,
  Ruby: /`|%x|\b(system|exec|spawn|fork|eval|instance_eval|send|public_send|syscall)\b|IO\.popen|Open3|Process\.|PTY|\.unpack|Base64|\\x[0-9a-f]{2}|\.chr\b/i,
  PHP: /`|\b(shell_exec|exec|system|passthru|popen|proc_open|pcntl_exec|eval|assert|create_function|base64_decode|chr)\s*\(/i,
  Lua: /\bos\s*\.\s*execute|\bio\s*\.\s*popen|\bload(string)?\s*\(|\bdofile\b|\bstring\s*\.\s*char\b/i,
  R: /\b(system2?|shell|pipe|eval|parse)\s*\(|processx/i,
  awk: /\bsystem\s*\(|\|\s*getline|\|\s*"|print[^;}]*\|/i,
};

const MAX_LITERALS = 50;

/** What inline code in `language` may run: its first process-starting construct, and its string literals. */
export function inlineRisk(inline: InlineCode): InlineRisk {
  const match = RUNS[inline.language]?.exec(inline.code);
  const literals: string[] = [];
  for (const found of inline.code.matchAll(/'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`/g)) {
    if (literals.length === MAX_LITERALS) break;
    const text = found[1] ?? found[2] ?? found[3] ?? '';
    if (text.trim() !== '') literals.push(text.replace(/\\(.)/g, '$1'));
  }
  return { runs: match?.[0], literals };
}

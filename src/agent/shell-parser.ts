/**
 * A small POSIX-shell reader for the command policy: enough of sh's grammar to find every simple
 * command a line would run (across `&&`, `;`, `|`, subshells and substitutions), with quotes removed.
 * It is not an interpreter: variables stay unexpanded and anything it cannot follow is kept as text.
 */

export type ShellWord = {
  /** The word after quote removal; substitutions stay as their source text. */
  text: string;
  /** Sources of `$(...)`, backquote and `<(...)`/`>(...)` substitutions inside the word. */
  substitutions: string[];
};

export type ShellRedirect = { op: string; target: ShellWord };

export type SimpleCommand = { words: ShellWord[]; redirects: ShellRedirect[] };

/** Commands joined by `|`; a script is a list of pipelines joined by `;`, `&&`, `||`, `&` or newlines. */
export type Pipeline = SimpleCommand[];

const REDIRECT_OPS = ['&>>', '<<<', '<<-', '>>', '<<', '>&', '<&', '&>', '>|', '<>', '>', '<'];

export function parseShell(source: string): Pipeline[] {
  const pipelines: Pipeline[] = [];
  let pipeline: Pipeline = [];
  let command: SimpleCommand = { words: [], redirects: [] };
  let word: ShellWord | undefined;
  let pendingRedirect: string | undefined;
  const heredocs: string[] = [];
  let i = 0;

  const wordAt = (): ShellWord => (word ??= { text: '', substitutions: [] });
  const endWord = () => {
    if (!word) return;
    if (pendingRedirect) {
      command.redirects.push({ op: pendingRedirect, target: word });
      if (pendingRedirect === '<<' || pendingRedirect === '<<-') heredocs.push(word.text);
      pendingRedirect = undefined;
    } else {
      command.words.push(word);
    }
    word = undefined;
  };
  const endCommand = () => {
    endWord();
    if (command.words.length > 0 || command.redirects.length > 0) pipeline.push(command);
    command = { words: [], redirects: [] };
  };
  const endPipeline = () => {
    endCommand();
    if (pipeline.length > 0) pipelines.push(pipeline);
    pipeline = [];
  };

  while (i < source.length) {
    const c = source[i]!;
    const rest = source.slice(i);

    if (c === '\n') {
      endPipeline();
      i = skipHeredocBodies(source, i + 1, heredocs.splice(0));
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r') {
      endWord();
      i++;
      continue;
    }
    if (c === '#' && !word) {
      while (i < source.length && source[i] !== '\n') i++;
      continue;
    }
    if (c === '\\') {
      if (source[i + 1] === '\n') i += 2;
      else {
        wordAt().text += source[i + 1] ?? '';
        i += 2;
      }
      continue;
    }
    if (c === "'") {
      const end = source.indexOf("'", i + 1);
      const stop = end === -1 ? source.length : end;
      wordAt().text += source.slice(i + 1, stop);
      i = stop + 1;
      continue;
    }
    if (c === '"') {
      i = readDoubleQuoted(source, i + 1, wordAt());
      continue;
    }
    if (c === '$' || c === '`') {
      i = readDollarOrBackquote(source, i, wordAt());
      continue;
    }
    if ((c === '<' || c === '>') && source[i + 1] === '(' && !word) {
      const end = matchingParen(source, i + 2);
      const current = wordAt();
      current.substitutions.push(source.slice(i + 2, end));
      current.text += '/dev/fd/63';
      i = end + 1;
      continue;
    }
    const redirect = REDIRECT_OPS.find((op) => rest.startsWith(op));
    if (redirect) {
      // A word of digits right before a redirect is a file descriptor (`2>&1`), not an argument.
      if (word && /^\d+$/.test(word.text) && word.substitutions.length === 0) word = undefined;
      endWord();
      pendingRedirect = redirect;
      i += redirect.length;
      continue;
    }
    if (rest.startsWith('&&') || rest.startsWith('||') || rest.startsWith(';;')) {
      endPipeline();
      i += 2;
      continue;
    }
    if (rest.startsWith('|&') || c === '|') {
      endCommand();
      i += c === '|' && source[i + 1] === '&' ? 2 : 1;
      continue;
    }
    if (c === ';' || c === '&' || c === '(' || c === ')') {
      endPipeline();
      i++;
      continue;
    }
    wordAt().text += c;
    i++;
  }
  endPipeline();
  return pipelines;
}

/** Reads a `"..."` body starting after the opening quote; returns the index after the closing quote. */
function readDoubleQuoted(source: string, start: number, word: ShellWord): number {
  let i = start;
  while (i < source.length && source[i] !== '"') {
    const c = source[i]!;
    if (c === '\\' && i + 1 < source.length) {
      const next = source[i + 1]!;
      if ('"\\$`'.includes(next)) word.text += next;
      else if (next !== '\n') word.text += c + next;
      i += 2;
    } else if (c === '$' || c === '`') {
      i = readDollarOrBackquote(source, i, word);
    } else {
      word.text += c;
      i++;
    }
  }
  return i + 1;
}

/** Reads `$(...)`, `$((...))`, `${...}`, `$name` or a backquoted command at `start`. */
function readDollarOrBackquote(source: string, start: number, word: ShellWord): number {
  if (source[start] === '`') {
    let end = start + 1;
    while (end < source.length && source[end] !== '`') end += source[end] === '\\' ? 2 : 1;
    word.substitutions.push(source.slice(start + 1, end).replace(/\\(.)/g, '$1'));
    word.text += source.slice(start, end + 1);
    return end + 1;
  }
  const next = source[start + 1];
  if (next === '(' && source[start + 2] === '(') {
    const end = matchingParen(source, start + 2);
    const close = source[end + 1] === ')' ? end + 1 : end;
    word.text += source.slice(start, close + 1);
    return close + 1;
  }
  if (next === '(') {
    const end = matchingParen(source, start + 2);
    word.substitutions.push(source.slice(start + 2, end));
    word.text += source.slice(start, end + 1);
    return end + 1;
  }
  if (next === '{') {
    const close = source.indexOf('}', start + 2);
    const end = close === -1 ? source.length : close + 1;
    word.text += source.slice(start, end);
    return end;
  }
  word.text += '$';
  return start + 1;
}

/** Index of the `)` closing a group whose body starts at `start`, honouring quotes and nesting. */
function matchingParen(source: string, start: number): number {
  let depth = 1;
  let i = start;
  while (i < source.length) {
    const c = source[i]!;
    if (c === '\\') i += 2;
    else if (c === "'") {
      const end = source.indexOf("'", i + 1);
      i = end === -1 ? source.length : end + 1;
    } else if (c === '"') {
      i = readDoubleQuoted(source, i + 1, { text: '', substitutions: [] });
    } else {
      if (c === '(') depth++;
      if (c === ')' && --depth === 0) return i;
      i++;
    }
  }
  return source.length;
}

/** Skips here-document bodies (their text is data, not commands) that start at `start`. */
function skipHeredocBodies(source: string, start: number, delimiters: string[]): number {
  let i = start;
  for (const delimiter of delimiters) {
    while (i < source.length) {
      const lineEnd = source.indexOf('\n', i);
      const end = lineEnd === -1 ? source.length : lineEnd;
      const line = source.slice(i, end).replace(/^\t+/, '');
      i = end + 1;
      if (line === delimiter) break;
    }
  }
  return Math.min(i, source.length);
}

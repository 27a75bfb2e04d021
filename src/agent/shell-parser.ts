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

/** Where the reader is in a script: what it has read so far and what it is in the middle of. */
type ShellReader = {
  pipelines: Pipeline[];
  pipeline: Pipeline;
  command: SimpleCommand;
  word: ShellWord | undefined;
  /** The redirect operator whose target is the next word. */
  pendingRedirect: string | undefined;
  /** Delimiters of the here-documents whose bodies start at the next newline. */
  heredocs: string[];
};

/** The simple commands `source` would run, grouped into pipelines. */
export function parseShell(source: string): Pipeline[] {
  const reader: ShellReader = {
    pipelines: [],
    pipeline: [],
    command: { words: [], redirects: [] },
    word: undefined,
    pendingRedirect: undefined,
    heredocs: [],
  };
  let i = 0;
  while (i < source.length) i = readAt(reader, source, i);
  endPipeline(reader);
  return reader.pipelines;
}

/** Reads what starts at `i` (a separator, a quoted part, an operator or a character); returns the index after it. */
function readAt(reader: ShellReader, source: string, i: number): number {
  const c = source[i]!;
  if (c === '\n') {
    endPipeline(reader);
    return skipHeredocBodies(source, i + 1, reader.heredocs.splice(0));
  }
  if (c === ' ' || c === '\t' || c === '\r') {
    endWord(reader);
    return i + 1;
  }
  if (c === '#' && !reader.word) {
    const newline = source.indexOf('\n', i);
    return newline === -1 ? source.length : newline;
  }
  const next = readQuoting(reader, source, i) ?? readOperator(reader, source, i);
  if (next !== undefined) return next;
  wordAt(reader).text += c;
  return i + 1;
}

/** Backslashes, quotes and substitutions, which add to the current word; undefined if none starts at `i`. */
function readQuoting(reader: ShellReader, source: string, i: number): number | undefined {
  const c = source[i]!;
  if (c === '\\') {
    if (source[i + 1] === '\n') return i + 2;
    wordAt(reader).text += source[i + 1] ?? '';
    return i + 2;
  }
  if (c === "'") {
    const end = source.indexOf("'", i + 1);
    const stop = end === -1 ? source.length : end;
    wordAt(reader).text += source.slice(i + 1, stop);
    return stop + 1;
  }
  if (c === '"') return readDoubleQuoted(source, i + 1, wordAt(reader));
  if (c === '$' || c === '`') return readDollarOrBackquote(source, i, wordAt(reader));
  if ((c === '<' || c === '>') && source[i + 1] === '(' && !reader.word) {
    const end = matchingParen(source, i + 2);
    const current = wordAt(reader);
    current.substitutions.push(source.slice(i + 2, end));
    current.text += '/dev/fd/63';
    return end + 1;
  }
  return undefined;
}

/** Redirects and the operators that end a command or a pipeline; undefined if none starts at `i`. */
function readOperator(reader: ShellReader, source: string, i: number): number | undefined {
  const c = source[i]!;
  const rest = source.slice(i);
  const redirect = REDIRECT_OPS.find((op) => rest.startsWith(op));
  if (redirect) {
    // A word of digits right before a redirect is a file descriptor (`2>&1`), not an argument.
    const { word } = reader;
    if (word && /^\d+$/.test(word.text) && word.substitutions.length === 0) reader.word = undefined;
    endWord(reader);
    reader.pendingRedirect = redirect;
    return i + redirect.length;
  }
  if (rest.startsWith('&&') || rest.startsWith('||') || rest.startsWith(';;')) {
    endPipeline(reader);
    return i + 2;
  }
  if (rest.startsWith('|&') || c === '|') {
    endCommand(reader);
    return i + (c === '|' && source[i + 1] === '&' ? 2 : 1);
  }
  if (c === ';' || c === '&' || c === '(' || c === ')') {
    endPipeline(reader);
    return i + 1;
  }
  return undefined;
}

function wordAt(reader: ShellReader): ShellWord {
  reader.word ??= { text: '', substitutions: [] };
  return reader.word;
}

function endWord(reader: ShellReader): void {
  const { word, pendingRedirect, command } = reader;
  if (!word) return;
  if (pendingRedirect) {
    command.redirects.push({ op: pendingRedirect, target: word });
    if (pendingRedirect === '<<' || pendingRedirect === '<<-') reader.heredocs.push(word.text);
    reader.pendingRedirect = undefined;
  } else {
    command.words.push(word);
  }
  reader.word = undefined;
}

function endCommand(reader: ShellReader): void {
  endWord(reader);
  const { command } = reader;
  if (command.words.length > 0 || command.redirects.length > 0) reader.pipeline.push(command);
  reader.command = { words: [], redirects: [] };
}

function endPipeline(reader: ShellReader): void {
  endCommand(reader);
  if (reader.pipeline.length > 0) reader.pipelines.push(reader.pipeline);
  reader.pipeline = [];
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

/**
 * A small syntax highlighter for diff lines: comments, strings, numbers and keywords of the
 * common languages, chosen by file extension. Returns tokens (never HTML), which the view renders
 * as text in spans, so nothing in a diff can become markup.
 */
export type Token = { text: string; kind?: 'kw' | 'str' | 'com' | 'num' };

type Lang = { keywords: Set<string>; lineComment?: string; hash?: boolean };

const words = (text: string) => new Set(text.split(' '));
const cLike = words(
  'break case catch class const continue default do else enum export extends false finally for function if import in instanceof interface let new null return static super switch this throw true try type typeof undefined var void while with yield async await from as of readonly public private protected implements package abstract',
);
const langs: Record<string, Lang> = {
  js: { keywords: cLike, lineComment: '//' },
  go: {
    keywords: words(
      'break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false',
    ),
    lineComment: '//',
  },
  rs: {
    keywords: words(
      'as break const continue crate else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while async await dyn',
    ),
    lineComment: '//',
  },
  py: {
    keywords: words(
      'and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield',
    ),
    hash: true,
  },
  sh: {
    keywords: words('if then else elif fi case esac for while until do done in function return local export set'),
    hash: true,
  },
  rb: {
    keywords: words(
      'def end if elsif else unless while until for in do return class module self nil true false require yield begin rescue ensure',
    ),
    hash: true,
  },
  java: { keywords: cLike, lineComment: '//' },
  c: {
    keywords: words(
      'auto break case char const continue default do double else enum extern float for goto if int long register return short signed sizeof static struct switch typedef union unsigned void volatile while bool true false nullptr class public private template namespace using',
    ),
    lineComment: '//',
  },
  yaml: { keywords: words('true false null yes no on off'), hash: true },
};
const byExtension: Record<string, string> = {
  ts: 'js',
  tsx: 'js',
  js: 'js',
  jsx: 'js',
  mjs: 'js',
  cjs: 'js',
  json: 'js',
  go: 'go',
  rs: 'rs',
  py: 'py',
  sh: 'sh',
  bash: 'sh',
  rb: 'rb',
  java: 'java',
  kt: 'java',
  scala: 'java',
  cs: 'java',
  swift: 'java',
  c: 'c',
  h: 'c',
  cc: 'c',
  cpp: 'c',
  hpp: 'c',
  yml: 'yaml',
  yaml: 'yaml',
  toml: 'yaml',
};

export function languageOf(path: string): Lang | undefined {
  const name = path.split('/').pop() ?? '';
  if (name === 'Dockerfile' || name === 'Makefile') return langs.sh;
  const ext = name.includes('.') ? name.split('.').pop()!.toLowerCase() : '';
  const key = byExtension[ext];
  return key ? langs[key] : undefined;
}

const pattern =
  /("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`(?:[^`\\]|\\.)*`?)|(\b\d[\d_]*(?:\.\d+)?\b)|([A-Za-z_$][\w$]*)|(\/\/.*|#.*)/g;

/** Splits one line of code into tokens. Lines past 2,000 characters are left plain. */
export function highlightLine(line: string, lang: Lang | undefined): Token[] {
  if (!lang || line.length > 2000) return [{ text: line }];
  const tokens: Token[] = [];
  let last = 0;
  pattern.lastIndex = 0;
  for (let m = pattern.exec(line); m; m = pattern.exec(line)) {
    const [text] = m;
    let kind: Token['kind'];
    if (m[1]) kind = 'str';
    else if (m[2]) kind = 'num';
    else if (m[3]) kind = lang.keywords.has(text) ? 'kw' : undefined;
    else if (m[4]) {
      const isComment = (text.startsWith('//') && lang.lineComment === '//') || (text.startsWith('#') && lang.hash);
      if (!isComment) {
        // Not a comment in this language: take one character and go on scanning after it.
        pattern.lastIndex = m.index + 1;
        continue;
      }
      kind = 'com';
    }
    if (m.index > last) tokens.push({ text: line.slice(last, m.index) });
    tokens.push(kind ? { text, kind } : { text });
    last = m.index + text.length;
    if (kind === 'com') break;
  }
  if (last < line.length) tokens.push({ text: line.slice(last) });
  return tokens;
}

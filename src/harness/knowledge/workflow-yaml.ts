/**
 * The part of YAML GitHub Actions workflows are written in: block mappings and sequences by
 * indentation, flow sequences (`[push, pull_request]`), quoted and plain scalars, block scalars
 * (`|`, `>`, with chomping indicators) and comments. Anchors, tags and multi-line flow mappings are
 * read as plain text. Never throws: what it cannot read becomes a string or is left out.
 */
export type YamlValue = string | YamlValue[] | { [key: string]: YamlValue } | null;

type Line = { indent: number; text: string; raw: string };

export function parseWorkflowYaml(source: string): YamlValue {
  const lines: Line[] = source
    .split(/\r?\n/)
    .map((raw) => ({ indent: raw.length - raw.trimStart().length, text: stripComment(raw.trim()), raw }));
  const state = { i: 0 };
  return parseBlock(lines, state, -1);
}

function isBlank(line: Line): boolean {
  return line.text === '' || line.text === '---' || line.text === '...';
}

function skipBlank(lines: Line[], state: { i: number }): void {
  while (state.i < lines.length && isBlank(lines[state.i]!)) state.i++;
}

/** A block (mapping or sequence) whose lines are indented more than `parent`. */
function parseBlock(lines: Line[], state: { i: number }, parent: number): YamlValue {
  skipBlank(lines, state);
  const first = lines[state.i];
  if (!first || first.indent <= parent) return null;
  return first.text.startsWith('- ') || first.text === '-'
    ? parseSequence(lines, state, first.indent)
    : parseMapping(lines, state, first.indent);
}

function parseSequence(lines: Line[], state: { i: number }, indent: number): YamlValue[] {
  const items: YamlValue[] = [];
  for (skipBlank(lines, state); state.i < lines.length; skipBlank(lines, state)) {
    const line = lines[state.i]!;
    if (line.indent !== indent || !(line.text.startsWith('- ') || line.text === '-')) break;
    const rest = line.text === '-' ? '' : line.text.slice(2).trim();
    const offset = line.raw.indexOf('-') + 2;
    if (rest === '') {
      state.i++;
      items.push(parseBlock(lines, state, indent));
    } else if (keyOf(rest)) {
      // `- key: value` opens a mapping whose keys sit at the column after the dash.
      lines[state.i] = { indent: offset, text: rest, raw: line.raw };
      items.push(parseMapping(lines, state, offset));
    } else {
      state.i++;
      items.push(scalar(rest));
    }
  }
  return items;
}

function parseMapping(lines: Line[], state: { i: number }, indent: number): { [key: string]: YamlValue } {
  const map: { [key: string]: YamlValue } = {};
  for (skipBlank(lines, state); state.i < lines.length; skipBlank(lines, state)) {
    const line = lines[state.i]!;
    if (line.indent !== indent) break;
    const kv = keyOf(line.text);
    if (!kv) {
      state.i++;
      continue;
    }
    const [key, value] = kv;
    state.i++;
    if (/^[|>][-+]?\d*$/.test(value)) map[key] = blockScalar(lines, state, indent, value);
    else if (value === '') {
      skipBlank(lines, state);
      const next = lines[state.i];
      // A sequence may sit at the same indentation as its key.
      if (next && next.indent === indent && next.text.startsWith('- ')) map[key] = parseSequence(lines, state, indent);
      else map[key] = parseBlock(lines, state, indent);
    } else map[key] = scalar(value, lines, state, indent);
  }
  return map;
}

/** `key: value` (the key plain or quoted), or undefined for a line that is not one. */
function keyOf(text: string): [string, string] | undefined {
  const quoted = /^(["'])(.*?)\1\s*:(?:\s+(.*)|\s*$)/.exec(text);
  if (quoted) return [quoted[2]!, (quoted[3] ?? '').trim()];
  const plain = /^([^\s"'[{][^:]*?)\s*:(?:\s+(.*)|\s*$)/.exec(text);
  if (plain && !plain[1]!.includes('${{')) return [plain[1]!, (plain[2] ?? '').trim()];
  return undefined;
}

function blockScalar(lines: Line[], state: { i: number }, parent: number, header: string): string {
  const body: string[] = [];
  let indent = -1;
  while (state.i < lines.length) {
    const line = lines[state.i]!;
    if (line.raw.trim() === '') {
      body.push('');
      state.i++;
      continue;
    }
    if (line.indent <= parent) break;
    if (indent < 0) indent = line.indent;
    if (line.indent < indent) break;
    body.push(line.raw.slice(indent));
    state.i++;
  }
  while (body.length && body.at(-1) === '') body.pop();
  return header.startsWith('>') ? body.join(' ').replace(/ {2,}/g, ' ') : body.join('\n');
}

function scalar(value: string, lines?: Line[], state?: { i: number }, parent?: number): YamlValue {
  if (value.startsWith('[') && value.endsWith(']')) return splitFlow(value.slice(1, -1)).map((v) => scalar(v));
  if (/^".*"$/.test(value)) return value.slice(1, -1).replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  if (/^'.*'$/.test(value)) return value.slice(1, -1).replace(/''/g, "'");
  if (value === 'null' || value === '~') return null;
  // A plain scalar may go on over more-indented lines (folded into one).
  let text = value;
  if (lines && state && parent !== undefined) {
    while (
      state.i < lines.length &&
      !isBlank(lines[state.i]!) &&
      lines[state.i]!.indent > parent &&
      !keyOf(lines[state.i]!.text) &&
      !lines[state.i]!.text.startsWith('- ')
    ) {
      text += ` ${lines[state.i]!.text}`;
      state.i++;
    }
  }
  return text;
}

function splitFlow(inner: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = '';
  let current = '';
  for (const ch of inner) {
    if (quote) {
      if (ch === quote) quote = '';
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '[' || ch === '{') depth++;
    else if (ch === ']' || ch === '}') depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
      continue;
    }
    current += ch;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

/** Drops a `#` comment that starts a line or follows a space, outside quotes. */
function stripComment(text: string): string {
  if (text.startsWith('#')) return '';
  let quote = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      if (ch === quote) quote = '';
    } else if (ch === '"' || ch === "'") {
      if (i === 0 || /[\s:[,{-]/.test(text[i - 1]!)) quote = ch;
    } else if (ch === '#' && /\s/.test(text[i - 1] ?? '')) return text.slice(0, i).trimEnd();
  }
  return text;
}

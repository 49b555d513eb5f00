/**
 * Which language is a notebook cell written in?  Mirrors the `%%metal` magic's
 * own `--lang auto` rule (DESIGN.md): the body is the Python DSL when it is a
 * `def` (possibly with decorators), otherwise it is a Metal Shading Language body.
 */

export type CellLanguage = 'msl' | 'python' | null;

const MAGIC_RE = /^%%metal(?:\s|$)/;
const LANG_RE = /--lang(?:\s+|=)(\w+)/;
const PREPROCESSOR_RE =
  /^#\s*(?:include|define|undef|if|ifdef|ifndef|elif|else|endif|pragma|error|warning|line)\b/;

/**
 * `null` for a cell that is not a `%%metal` cell, else the language of its body.
 */
export function detectCellLanguage(source: string): CellLanguage {
  // A `%%metal` cell magic must be the first line of the cell.
  const newline = source.indexOf('\n');
  const first = newline < 0 ? source : source.slice(0, newline);
  if (!MAGIC_RE.test(first)) {
    return null;
  }
  const lang = LANG_RE.exec(first);
  if (lang) {
    const value = lang[1].toLowerCase();
    if (value === 'python' || value === 'dsl') {
      return 'python';
    }
    if (value === 'msl' || value === 'metal') {
      return 'msl';
    }
  }
  const body = newline < 0 ? '' : source.slice(newline + 1);
  return bodyLanguage(body);
}

/** The language of a `%%metal` body: 'python' for a (decorated) `def`, else 'msl'. */
export function bodyLanguage(body: string): 'msl' | 'python' {
  for (const raw of body.split('\n')) {
    const line = raw.trim();
    if (line === '') {
      continue;
    }
    if (line.startsWith('#') && !PREPROCESSOR_RE.test(line)) {
      continue; // a Python comment before the def
    }
    return /^(?:@[\w.]|(?:async\s+)?def\s)/.test(line) ? 'python' : 'msl';
  }
  return 'msl';
}

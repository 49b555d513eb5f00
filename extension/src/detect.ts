/**
 * Which language is a notebook cell written in?  Follows the `%%metal` magic's
 * `--lang auto` rule (metalbench/notebook/magic.py `detect_lang`: the body is the
 * Python DSL when it parses as Python with a top-level `def`, else MSL) without a
 * Python parser: a `def name(` line or a line starting with a decorator `@name`
 * never occurs in MSL, and while a DSL body is half typed (not yet valid Python)
 * it stays Python-highlighted.  Indented `def`s count too: typed after a
 * decorator while the cell was still Metal, the editor may have indented it.
 */

export type CellLanguage = 'msl' | 'python' | null;

const MAGIC_RE = /^%%metal(?:\s|$)/;
const LANG_RE = /--lang(?:\s+|=)(python|msl)\b/;
const DSL_LINE_RE = /^[ \t]*(?:@[A-Za-z_]|(?:async[ \t]+)?def[ \t]+\w+[ \t]*\()/m;

/**
 * `null` for a cell that is not a `%%metal` cell, else the language of its body
 * (`--lang python|msl` on the magic line wins).
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
    return lang[1] as 'msl' | 'python';
  }
  return bodyLanguage(newline < 0 ? '' : source.slice(newline + 1));
}

/** The language of a `%%metal` body: 'python' for a DSL kernel, else 'msl'. */
export function bodyLanguage(body: string): 'msl' | 'python' {
  return DSL_LINE_RE.test(body) ? 'python' : 'msl';
}

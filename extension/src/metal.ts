/**
 * The Metal Shading Language (MSL) as a CodeMirror 6 language.
 *
 * MSL is C++14 plus address spaces, vector/matrix types, [[attributes]] and a
 * standard library; we build it from the legacy `clike` stream parser (the same
 * one behind `text/x-c++src`) with Metal's vocabulary added.  A leading
 * `%%metal ...` magic line (notebook cells) is highlighted as a meta line.
 */
import {
  HighlightStyle,
  LanguageSupport,
  StreamLanguage,
  syntaxHighlighting
} from '@codemirror/language';
import { clike } from '@codemirror/legacy-modes/mode/clike';
import { tagHighlighter, tags as t } from '@lezer/highlight';

import { METAL_ATOMS, METAL_BUILTINS } from './metalWords';

export const METAL_MIME = 'text/x-metal';

function words(str: string): Record<string, boolean> {
  const obj: Record<string, boolean> = {};
  for (const w of str.split(/\s+/)) {
    if (w) {
      obj[w] = true;
    }
  }
  return obj;
}

const C_KEYWORDS =
  'auto if break case register continue return default do sizeof static else ' +
  'struct switch extern typedef union for goto while enum const volatile inline ' +
  'restrict asm fortran';
const CPP_KEYWORDS =
  'alignas alignof and and_eq bitand bitor catch class compl concept constexpr ' +
  'const_cast decltype delete dynamic_cast explicit export final friend import ' +
  'module mutable namespace new noexcept not not_eq operator or or_eq override ' +
  'private protected public reinterpret_cast requires static_assert static_cast ' +
  'template this thread_local throw try typeid typename using virtual xor xor_eq';
/** Metal address spaces, function qualifiers and other MSL keywords. */
export const METAL_KEYWORDS =
  'device threadgroup threadgroup_imageblock constant thread ray_data object_data ' +
  'kernel vertex fragment visible stitchable mesh object';

const SCALARS = [
  'bool',
  'char',
  'uchar',
  'short',
  'ushort',
  'int',
  'uint',
  'long',
  'ulong',
  'half',
  'float',
  'bfloat'
];
/** Scalar, vector (`float4`, `packed_half3`) and matrix (`float4x4`) types. */
const TYPE_RE = new RegExp(
  '^(?:(?:packed_)?(?:' +
    SCALARS.join('|') +
    ')[234]?|(?:half|float|bfloat)[234]x[234]|u?int(?:8|16|32|64)_t|size_t|ptrdiff_t)$'
);
const OTHER_TYPES = words(
  'void signed unsigned double wchar_t char8_t char16_t char32_t ' +
  'bfloat16_t float16_t float32_t atomic_int atomic_uint atomic_bool atomic_float ' +
  'atomic sampler texture1d texture1d_array texture2d texture2d_array texture3d ' +
  'texturecube texturecube_array texture2d_ms depth2d depth2d_array depthcube ' +
  'array simdgroup_matrix simdgroup_float8x8 simdgroup_half8x8 simdgroup_bfloat8x8 ' +
  'vec matrix packed_vec'
);

export function isMetalType(word: string): boolean {
  return TYPE_RE.test(word) || Object.prototype.hasOwnProperty.call(OTHER_TYPES, word);
}

/** Metal's functions (the builtin registry's words, generated into metalWords.ts). */
export { METAL_BUILTINS };

const ATOMS = words(METAL_ATOMS);

type HookState = { startOfLine: boolean; tokenize: unknown };

/** `# include`, `#define` ... lines are preprocessor lines (as in C++). */
function preprocessorHook(stream: any, state: HookState): string | false {
  if (!state.startOfLine) {
    return false;
  }
  stream.skipToEnd();
  return 'meta';
}

/** `[[kernel]]`, `[[buffer(0)]]`, `[[thread_position_in_grid]]`. */
function attributeHook(stream: any): string | false {
  if (stream.match(/^\[[^\[\]]*\]\]/)) {
    return 'attribute';
  }
  return false;
}

/** A `%%metal ...` cell-magic line at the very start of a cell. */
function magicHook(stream: any, state: HookState): string | false {
  if (state.startOfLine && stream.start === 0 && stream.match(/^%\w+/)) {
    stream.skipToEnd();
    return 'meta';
  }
  return false;
}

export const metalParser = clike({
  name: 'metal',
  keywords: words(C_KEYWORDS + ' ' + CPP_KEYWORDS + ' ' + METAL_KEYWORDS),
  types: isMetalType as any,
  builtin: words(METAL_BUILTINS),
  blockKeywords: words('case do else for if switch while struct class try catch'),
  atoms: ATOMS,
  indentSwitch: false,
  isIdentifierChar: /[\w$_~\xa1-\uffff]/,
  hooks: {
    '#': preprocessorHook,
    '[': attributeHook,
    '%': magicHook
  }
} as any);

export const metalLanguage = StreamLanguage.define(metalParser);

/**
 * JupyterLab's highlight style has no colour for type names, so add one (the
 * classic `variable-3` colour that CodeMirror 5 gave C types).
 */
const metalHighlightStyle = HighlightStyle.define([
  { tag: t.typeName, color: 'var(--jp-mirror-editor-variable-3-color)' }
]);

/**
 * Stable `tok-*` class names (as @lezer/highlight's `classHighlighter`, plus
 * builtins and attributes) for user CSS and the browser tests.
 */
const metalClassHighlighter = tagHighlighter([
  { tag: t.keyword, class: 'tok-keyword' },
  { tag: t.typeName, class: 'tok-typeName' },
  { tag: t.standard(t.variableName), class: 'tok-builtin' },
  { tag: t.attributeName, class: 'tok-attributeName' },
  { tag: t.meta, class: 'tok-meta' },
  { tag: t.atom, class: 'tok-atom' },
  { tag: t.number, class: 'tok-number' },
  { tag: t.string, class: 'tok-string' },
  { tag: t.comment, class: 'tok-comment' },
  { tag: t.operator, class: 'tok-operator' },
  { tag: t.definition(t.variableName), class: 'tok-definition' },
  { tag: t.variableName, class: 'tok-variableName' }
]);

export function metal(): LanguageSupport {
  return new LanguageSupport(metalLanguage, [
    syntaxHighlighting(metalHighlightStyle),
    syntaxHighlighting(metalClassHighlighter)
  ]);
}

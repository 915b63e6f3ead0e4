import { StreamLanguage, type StreamParser } from '@codemirror/language';
import type { CompletionContext, CompletionResult, Completion } from '@codemirror/autocomplete';

// RQL for the editor: a stream tokenizer for highlighting (keywords, functions, strings, numbers, parameters,
// comments) and completion of keywords, functions, the database's collections and indexes, and the fields seen
// in documents of the collection the query reads.

const keywords = [
  'from', 'index', 'where', 'and', 'or', 'not', 'in', 'all', 'between', 'order', 'by', 'asc', 'desc', 'ascending',
  'descending', 'select', 'load', 'as', 'include', 'limit', 'offset', 'group', 'update', 'declare', 'function',
  'distinct', 'true', 'false', 'null', 'filter', 'with',
];
const functions = [
  'search', 'exists', 'startsWith', 'endsWith', 'regex', 'boost', 'exact', 'lucene', 'id', 'count', 'sum', 'key',
  'moreLikeThis', 'facet', 'suggest', 'highlight', 'fuzzy', 'proximity', 'random', 'score',
  'spatial.within', 'spatial.intersects', 'spatial.contains', 'spatial.disjoint', 'spatial.circle', 'spatial.wkt',
  'spatial.point', 'spatial.distance',
];
const keywordSet = new Set(keywords);

interface State { inString: string | null; inComment: boolean }

const parser: StreamParser<State> = {
  startState: () => ({ inString: null, inComment: false }),
  token(stream, state) {
    if (state.inComment) {
      if (stream.skipTo('*/')) { stream.next(); stream.next(); state.inComment = false; } else stream.skipToEnd();
      return 'comment';
    }
    if (state.inString) {
      const quote = state.inString;
      let escaped = false;
      let ch: string | void;
      while ((ch = stream.next()) != null) {
        if (ch === quote && !escaped) { state.inString = null; break; }
        escaped = !escaped && ch === '\\';
      }
      return 'string';
    }
    if (stream.eatSpace()) return null;
    if (stream.match('//')) { stream.skipToEnd(); return 'comment'; }
    if (stream.match('/*')) { state.inComment = true; return 'comment'; }
    const ch = stream.peek();
    if (ch === "'" || ch === '"') { stream.next(); state.inString = ch; return parser.token(stream, state); }
    if (stream.match(/^\$[A-Za-z_][\w]*/)) return 'variableName.special';
    if (stream.match(/^-?\d+(\.\d+)?([eE][+-]?\d+)?/)) return 'number';
    if (stream.match(/^[A-Za-z_@][\w.@]*(?=\s*\()/)) return 'function';
    const word = stream.match(/^[A-Za-z_@][\w@]*/) as RegExpMatchArray | null;
    if (word) return keywordSet.has(word[0].toLowerCase()) ? 'keyword' : 'propertyName';
    if (stream.match(/^(<=|>=|!=|==|=|<|>)/)) return 'operator';
    stream.next();
    return 'punctuation';
  },
  languageData: { commentTokens: { line: '//', block: { open: '/*', close: '*/' } } },
};

export const rqlLanguage = StreamLanguage.define(parser);

export interface RqlSchema {
  collections: string[];
  indexes: string[];
  fields: (collection: string) => string[];
}

/** Completion of RQL: after `from`, collections and `index`; after `from index`, index names; elsewhere keywords, functions and fields. */
export function rqlCompletion(schema: () => RqlSchema) {
  return (context: CompletionContext): CompletionResult | null => {
    const word = context.matchBefore(/[\w.@'"/$-]*/);
    if (!word || (word.from === word.to && !context.explicit)) return null;
    const before = context.state.doc.sliceString(0, word.from);
    const s = schema();
    let options: Completion[];
    if (/\bfrom\s+index\s+$/i.test(before)) {
      options = s.indexes.map((i) => ({ label: `'${i}'`, type: 'class', detail: 'index' }));
    } else if (/\bfrom\s+$/i.test(before)) {
      options = [...s.collections.map((c) => ({ label: c, type: 'class', detail: 'collection' })), { label: 'index', type: 'keyword' }];
    } else {
      const source = /\bfrom\s+([A-Za-z_@][\w@/-]*)/i.exec(context.state.doc.toString());
      const fields = source ? s.fields(source[1]) : [];
      options = [
        ...fields.map((f) => ({ label: f, type: 'property', detail: 'field', boost: 2 })),
        ...keywords.map((k) => ({ label: k, type: 'keyword' })),
        ...functions.map((f) => ({ label: f, type: 'function', apply: f + '(' })),
      ];
    }
    return { from: word.from, options, validFor: /^[\w.@'"/$-]*$/ };
  };
}

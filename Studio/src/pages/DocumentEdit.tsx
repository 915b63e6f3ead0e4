import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useLocation, useSearch } from 'wouter-preact';
import { api } from '../api';
import { Editor } from '../components/Editor';
import { ErrorBox } from '../components/ErrorBox';
import { confirmAction } from '../components/Confirm';
import { DocumentExtensions } from '../components/DocumentExtensions';
import { dbPath } from '../format';

type Doc = Record<string, unknown>;

/** Why `text` is not a document (a JSON object), or null. */
function objectError(text: string): string | null {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? null : 'A document is a JSON object.';
  } catch (e) {
    return (e as Error).message;
  }
}

/**
 * Opens, edits, creates, clones and deletes one document; the body is edited as JSON and the metadata shown apart,
 * with the document's attachments, counters, time series and revisions (DocumentExtensions).
 */
export function DocumentEdit({ db }: { db: string }) {
  const search = new URLSearchParams(useSearch());
  const [, navigate] = useLocation();
  const existingId = search.get('id');
  const cloneOf = search.get('clone');
  const newCollection = search.get('collection') ?? '';
  const [id, setId] = useState(existingId ?? (newCollection ? `${newCollection.toLowerCase()}/` : ''));
  const [text, setText] = useState('{\n  \n}');
  const [metadata, setMetadata] = useState<Doc>(newCollection ? { '@collection': newCollection } : {});
  const [collection, setCollection] = useState(newCollection);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState('');
  const [loading, setLoading] = useState(false);
  const [saving, setSaving] = useState(false);

  // The first render already holds a new document's fields: resetting them in this effect (which runs after paint)
  // would wipe what was typed in between.
  const mounted = useRef(false);
  useEffect(() => {
    const source = existingId ?? cloneOf;
    const first = !mounted.current;
    mounted.current = true;
    setNotice('');
    setError(null);
    if (!source) {
      if (!first) {
        setId(collection ? `${collection.toLowerCase()}/` : '');
        setMetadata(collection ? { '@collection': collection } : {});
      }
      return;
    }
    setLoading(true);
    api.getDocument(db, source).then((doc) => {
      if (!doc) {
        setError(new Error(`There is no document '${source}'.`));
        return;
      }
      const { ['@metadata']: meta, ...body } = doc as Doc;
      setText(JSON.stringify(body, null, 2));
      const m = (meta ?? {}) as Doc;
      setCollection(String(m['@collection'] ?? ''));
      if (existingId) {
        setMetadata(m);
        setId(existingId);
      } else {
        setMetadata(m['@collection'] ? { '@collection': m['@collection'] } : {});
        setId(m['@collection'] ? `${String(m['@collection']).toLowerCase()}/` : '');
      }
    }, setError).finally(() => setLoading(false));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [db, existingId, cloneOf]);

  const parseError = useMemo(() => objectError(text), [text]);

  // What the inputs hold now (Ctrl+Enter right after typing may come before the next render).
  const latest = useRef({ text, id, collection });
  latest.current = { text, id, collection };

  async function save() {
    const { text, id, collection } = latest.current;
    const parseError = objectError(text);
    if (parseError) { setError(new Error('The document is not valid JSON: ' + parseError)); return; }
    if (!id.trim()) { setError(new Error('The document needs an id (end it with / to have the server number it, e.g. orders/).')); return; }
    setSaving(true);
    setError(null);
    try {
      const body = JSON.parse(text) as Doc;
      const meta: Doc = { ...(collection ? { '@collection': collection } : {}) };
      for (const [k, v] of Object.entries(metadata)) if (!k.startsWith('@') || k === '@flags') meta[k] = v;
      const r = await api.putDocument(db, id.trim(), { ...body, '@metadata': meta });
      setNotice(`Saved ${r.Id}.`);
      if (r.Id !== existingId) navigate(dbPath(db, `/edit?id=${encodeURIComponent(r.Id)}`), { replace: true });
      else {
        const fresh = await api.getDocument(db, r.Id);
        if (fresh) setMetadata((fresh['@metadata'] ?? {}) as Doc);
      }
    } catch (e) {
      setError(e);
    } finally {
      setSaving(false);
    }
  }

  async function remove() {
    if (!existingId) return;
    const ok = await confirmAction({ title: `Delete ${existingId}?`, message: `The document '${existingId}' is deleted.`, confirm: 'Delete', danger: true });
    if (!ok) return;
    try {
      await api.deleteDocuments(db, [existingId]);
      navigate(dbPath(db, collection ? `/documents/${encodeURIComponent(collection)}` : '/documents'));
    } catch (e) {
      setError(e);
    }
  }

  return (
    <section>
      <h1>{existingId ? `Document ${existingId}` : cloneOf ? `Clone of ${cloneOf}` : 'New document'} <span class="muted">· {db}</span></h1>
      <div class="toolbar">
        <button class="primary" onClick={save} disabled={saving || loading}>{saving ? 'Saving…' : 'Save'}</button>
        {existingId && <button onClick={() => navigate(dbPath(db, `/edit?clone=${encodeURIComponent(existingId)}`))}>Clone</button>}
        {existingId && <button class="danger" onClick={remove}>Delete</button>}
        <span class="grow" />
        {notice && <span class="badge ok" role="status">{notice}</span>}
      </div>
      <ErrorBox error={error} />
      <div class="split" style={{ gridTemplateColumns: '1fr 300px' }}>
        <div>
          <div class="form-row">
            <label for="doc-id">Id</label>
            <input id="doc-id" class="mono" value={id} readOnly={!!existingId} disabled={loading} onInput={(e) => setId((e.target as HTMLInputElement).value)} />
          </div>
          <div class="form-row">
            <label for="doc-body">Body (JSON)</label>
            <Editor id="doc-body" language="json" label="Document JSON" value={text} onChange={(v) => { latest.current.text = v; setText(v); }} onRun={save} minHeight="360px" />
            {parseError && <span class="muted" role="status">Not valid JSON yet: {parseError}</span>}
          </div>
        </div>
        <aside class="panel" aria-label="Metadata">
          <h2 style={{ marginTop: 0 }}>Metadata</h2>
          <div class="form-row">
            <label for="doc-collection">Collection</label>
            <input id="doc-collection" value={collection} readOnly={!!existingId} disabled={loading} onInput={(e) => setCollection((e.target as HTMLInputElement).value)} />
          </div>
          <dl class="mono" style={{ fontSize: '12px', wordBreak: 'break-all' }}>
            {Object.entries(metadata).filter(([k]) => k !== '@collection' && k !== '@attachments').map(([k, v]) => (
              <div key={k}><dt class="muted">{k}</dt><dd style={{ margin: '0 0 6px' }}>{typeof v === 'string' ? v : JSON.stringify(v)}</dd></div>
            ))}
          </dl>
          {existingId && !loading && (
            <DocumentExtensions db={db} id={existingId} metadata={metadata} onChanged={async () => {
              const fresh = await api.getDocument(db, existingId);
              if (fresh) setMetadata((fresh['@metadata'] ?? {}) as Doc);
            }} />
          )}
        </aside>
      </div>
    </section>
  );
}

import { useEffect, useState } from 'preact/hooks';
import { useLocation, useSearch } from 'wouter-preact';
import { api, ApiError } from '../api';
import { Editor, type Marker } from '../components/Editor';
import { ErrorBox } from '../components/ErrorBox';
import { dbPath } from '../format';

interface Field { name: string; indexing: string; storage: boolean; analyzer: string }
type Language = 'csharp' | 'javascript';

const csharpExample = 'from o in docs.Orders\nselect new {\n    o.Company,\n    Total = o.Lines.Sum(l => l.Quantity * l.PricePerUnit)\n}';
const javascriptExample = "map('Orders', o => ({\n    Company: o.Company,\n    Total: o.Lines.reduce((s, l) => s + l.Quantity * l.PricePerUnit, 0)\n}))";

/** Where a compile error points: "Map 2, line 3, column 14: message" or "Reduce, line 1, column 5: message". */
export function compileMarker(message: string): { target: 'map' | 'reduce'; map: number; marker: Marker } | null {
  const m = /^(?:Map (\d+)|Reduce), line (\d+), column (\d+): ([\s\S]*)$/.exec(message);
  if (!m) return null;
  return { target: m[1] ? 'map' : 'reduce', map: m[1] ? Number(m[1]) - 1 : 0, marker: { line: Number(m[2]), column: Number(m[3]), message: m[4] } };
}

/** Creates or edits a static index: name, maps (C# or JavaScript), optional reduce and field options; compile errors shown at their line. */
export function IndexEdit({ db }: { db: string }) {
  const name0 = new URLSearchParams(useSearch()).get('name');
  const [, navigate] = useLocation();
  const [name, setName] = useState(name0 ?? '');
  const [language, setLanguage] = useState<Language>('csharp');
  const [maps, setMaps] = useState<string[]>([csharpExample]);
  const [reduce, setReduce] = useState('');
  const [fields, setFields] = useState<Field[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [markers, setMarkers] = useState<{ maps: Marker[][]; reduce: Marker[] }>({ maps: [], reduce: [] });
  const [saving, setSaving] = useState(false);

  useEffect(() => {
    if (!name0) return;
    api.indexes(db).then((r) => {
      const d = r.Results.find((x: { Name: string }) => x.Name === name0);
      if (!d) { setError(new Error(`There is no index '${name0}'.`)); return; }
      setLanguage(String(d.Type).startsWith('JavaScript') ? 'javascript' : 'csharp');
      setMaps(d.Maps);
      setReduce(d.Reduce ?? '');
      setFields(Object.entries((d.Fields ?? {}) as Record<string, { Indexing?: string; Storage?: string; Analyzer?: string }>).map(([n, f]) => ({ name: n, indexing: f.Indexing ?? 'Default', storage: f.Storage === 'Yes', analyzer: f.Analyzer ?? '' })));
    }, setError);
  }, [db, name0]);

  async function save() {
    setSaving(true);
    setError(null);
    setMarkers({ maps: [], reduce: [] });
    const definition = {
      Name: name.trim(),
      Maps: maps.filter((m) => m.trim()),
      Reduce: reduce.trim() || null,
      Type: language === 'javascript' ? (reduce.trim() ? 'JavaScriptMapReduce' : 'JavaScriptMap') : reduce.trim() ? 'MapReduce' : 'Map',
      Fields: Object.fromEntries(fields.filter((f) => f.name.trim()).map((f) => [f.name.trim(), { Indexing: f.indexing === 'Default' ? null : f.indexing, Storage: f.storage ? 'Yes' : null, Analyzer: f.analyzer || null }])),
    };
    try {
      if (!definition.Name) throw new Error('The index needs a name, e.g. Orders/ByCompany.');
      await api.putIndex(db, definition);
      navigate(dbPath(db, '/indexes'));
    } catch (e) {
      setError(e);
      if (e instanceof ApiError) {
        const where = compileMarker(e.message);
        if (where) {
          const byMap: Marker[][] = maps.map(() => []);
          if (where.target === 'map') (byMap[where.map] ??= []).push(where.marker);
          setMarkers({ maps: byMap, reduce: where.target === 'reduce' ? [where.marker] : [] });
        }
      }
    } finally {
      setSaving(false);
    }
  }

  const setField = (i: number, f: Partial<Field>) => setFields((fs) => fs.map((x, k) => (k === i ? { ...x, ...f } : x)));

  return (
    <section>
      <h1>{name0 ? `Edit index ${name0}` : 'New index'} <span class="muted">· {db}</span></h1>
      <div class="toolbar">
        <button class="primary" onClick={save} disabled={saving}>{saving ? 'Saving…' : 'Save index'}</button>
        <button onClick={() => navigate(dbPath(db, '/indexes'))}>Cancel</button>
      </div>
      <ErrorBox error={error} context="The index was not saved" />
      <div class="toolbar">
        <div class="form-row" style={{ flex: 1 }}>
          <label for="index-name">Name</label>
          <input id="index-name" value={name} readOnly={!!name0} onInput={(e) => setName((e.target as HTMLInputElement).value)} placeholder="Orders/ByCompany" />
        </div>
        <div class="form-row">
          <label for="index-language">Language</label>
          <select id="index-language" value={language} onChange={(e) => {
            const l = (e.target as HTMLSelectElement).value as Language;
            setLanguage(l);
            if (maps.length === 1 && (maps[0] === csharpExample || maps[0] === javascriptExample)) setMaps([l === 'csharp' ? csharpExample : javascriptExample]);
          }}>
            <option value="csharp">C# (LINQ)</option>
            <option value="javascript">JavaScript</option>
          </select>
        </div>
      </div>
      {maps.map((m, i) => (
        <div class="form-row" key={`${language}-${i}`}>
          <label id={`map-label-${i}`}>Map {i + 1}</label>
          <Editor language={language} label={`Map ${i + 1}`} value={m} onChange={(v) => setMaps((ms) => ms.map((x, k) => (k === i ? v : x)))} onRun={save} markers={markers.maps[i]} minHeight="120px" />
          {maps.length > 1 && <div><button onClick={() => setMaps((ms) => ms.filter((_, k) => k !== i))}>Remove map {i + 1}</button></div>}
        </div>
      ))}
      <div class="toolbar"><button onClick={() => setMaps((ms) => [...ms, ''])}>Add map</button></div>
      <div class="form-row">
        <label>Reduce (optional)</label>
        <Editor key={`reduce-${language}`} language={language} label="Reduce" value={reduce} onChange={setReduce} onRun={save} markers={markers.reduce} minHeight="80px"
          placeholder={language === 'csharp' ? 'from r in results group r by r.Company into g select new { Company = g.Key, Total = g.Sum(x => x.Total) }' : 'groupBy(x => x.Company).aggregate(g => ({ Company: g.key, Total: g.values.reduce((s, v) => s + v.Total, 0) }))'} />
      </div>
      <h2>Fields</h2>
      <table class="data" aria-label="Field options">
        <thead><tr><th>Field</th><th>Indexing</th><th>Stored</th><th>Analyzer</th><th><span class="visually-hidden">Remove</span></th></tr></thead>
        <tbody>
          {fields.map((f, i) => (
            <tr key={i}>
              <td><input aria-label={`Field ${i + 1} name`} value={f.name} onInput={(e) => setField(i, { name: (e.target as HTMLInputElement).value })} /></td>
              <td>
                <select aria-label={`Field ${i + 1} indexing`} value={f.indexing} onChange={(e) => setField(i, { indexing: (e.target as HTMLSelectElement).value })}>
                  <option>Default</option><option>Exact</option><option>Search</option>
                </select>
              </td>
              <td><input type="checkbox" aria-label={`Field ${i + 1} stored`} checked={f.storage} onChange={(e) => setField(i, { storage: (e.target as HTMLInputElement).checked })} /></td>
              <td><input aria-label={`Field ${i + 1} analyzer`} value={f.analyzer} placeholder="StandardAnalyzer" onInput={(e) => setField(i, { analyzer: (e.target as HTMLInputElement).value })} /></td>
              <td><button onClick={() => setFields((fs) => fs.filter((_, k) => k !== i))} aria-label={`Remove field ${i + 1}`}>Remove</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      <div class="toolbar" style={{ marginTop: '8px' }}><button onClick={() => setFields((fs) => [...fs, { name: '', indexing: 'Default', storage: false, analyzer: '' }])}>Add field</button></div>
    </section>
  );
}

import { useEffect, useState } from 'preact/hooks';
import { getJson, send } from '../api';
import { Editor } from '../components/Editor';
import { ErrorBox } from '../components/ErrorBox';

/** One of a database's configurations: where it is read and written, and what an unset one starts from. */
interface Setting {
  key: string;
  title: string;
  about: string;
  read: (db: string) => string;
  write: (db: string) => { method: string; url: string };
  unwrap?: (answer: any) => unknown; // eslint-disable-line @typescript-eslint/no-explicit-any
  start: unknown;
}

const base = (db: string) => `/databases/${encodeURIComponent(db)}`;

const settings: Setting[] = [
  {
    key: 'expiration', title: 'Document expiration',
    about: 'Documents whose @metadata has @expires are deleted once that time passes, checked every DeleteFrequencyInSec.',
    read: (db) => `${base(db)}/expiration/config`, write: (db) => ({ method: 'POST', url: `${base(db)}/admin/expiration/config` }),
    start: { Disabled: false, DeleteFrequencyInSec: 60 },
  },
  {
    key: 'revisions', title: 'Revisions',
    about: 'Which collections keep revisions of their documents, how many and for how long (Default applies to every other collection).',
    read: (db) => `${base(db)}/revisions/config`, write: (db) => ({ method: 'POST', url: `${base(db)}/admin/revisions/config` }),
    start: { Default: { Disabled: false, MinimumRevisionsToKeep: 5 }, Collections: {} },
  },
  {
    key: 'timeseries', title: 'Time series',
    about: 'Per collection: rollup policies (aggregate raw entries into coarser series) and retention; NamedValues name the values of a series.',
    read: (db) => `${base(db)}/timeseries/config`, write: (db) => ({ method: 'POST', url: `${base(db)}/admin/timeseries/config` }),
    start: { Collections: {} },
  },
  {
    key: 'client', title: 'Client configuration',
    about: "What the clients of this database take from the server: requests per session, load balancing, identity separator. Shown as it applies (the server's own where the database sets none).",
    read: (db) => `${base(db)}/configuration/client`, write: (db) => ({ method: 'PUT', url: `${base(db)}/admin/configuration/client` }),
    unwrap: (answer) => answer?.Configuration,
    start: { Disabled: false, MaxNumberOfRequestsPerSession: 30 },
  },
];

function SettingEditor({ db, setting }: { db: string; setting: Setting }) {
  const [text, setText] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const controller = new AbortController();
    setText(null);
    getJson(setting.read(db), controller.signal)
      .then((answer) => {
        const value = setting.unwrap ? setting.unwrap(answer) : answer;
        setText(JSON.stringify(value ?? setting.start, null, 2));
      })
      .catch((e) => { if ((e as Error).name !== 'AbortError') setError(e); });
    return () => controller.abort();
  }, [db, setting]);
  async function save() {
    if (text === null) return;
    setError(null);
    setSaved(null);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (e) {
      setError(new Error('This is not JSON: ' + (e as Error).message));
      return;
    }
    try {
      const { method, url } = setting.write(db);
      await send(method, url, body);
      setSaved(`${setting.title} saved.`);
    } catch (e) {
      setError(e);
    }
  }
  return (
    <details class="setting">
      <summary>{setting.title}</summary>
      <p class="muted">{setting.about}</p>
      {text === null && !error && <p class="muted">Loading…</p>}
      {text !== null && (
        <>
          <Editor language="json" label={`${setting.title} (JSON)`} value={text} onChange={setText} onRun={save} minHeight="80px" />
          <div class="toolbar" style={{ marginTop: '8px' }}>
            <button class="primary" onClick={save}>Save {setting.title.toLowerCase()}</button>
          </div>
        </>
      )}
      {saved && <div class="notice" role="status">{saved}</div>}
      <ErrorBox error={error} context={setting.title} />
    </details>
  );
}

/** The database's configurations (expiration, revisions, time series, client configuration), each read from and saved to the server as JSON. */
export function DatabaseSettings({ db }: { db: string }) {
  return (
    <div class="panel" style={{ marginTop: '12px' }}>
      <h2 style={{ marginTop: 0 }}>Database settings</h2>
      {settings.map((s) => <SettingEditor key={s.key} db={db} setting={s} />)}
    </div>
  );
}

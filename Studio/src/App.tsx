import { Router, Route, Switch, Link, useLocation, useRoute } from 'wouter-preact';
import { useEffect, useState } from 'preact/hooks';
import { lazy, Suspense } from 'preact/compat';
import { api, DatabasesChanged } from './api';
import { Databases } from './pages/Databases';
import { Documents } from './pages/Documents';
import { DocumentEdit } from './pages/DocumentEdit';
import { Query } from './pages/Query';
import { Indexes } from './pages/Indexes';
import { IndexEdit } from './pages/IndexEdit';
import { Tasks } from './pages/Tasks';
import { Cluster } from './pages/Cluster';

// The two screens with charts load their code (uPlot) when first opened.
const Dashboard = lazy(() => import('./pages/Dashboard').then((m) => m.Dashboard));
const Storage = lazy(() => import('./pages/Storage').then((m) => m.Storage));

function NavLink({ href, children }: { href: string; children: string }) {
  const [location] = useLocation();
  const current = location === href || (href !== '/' && location.startsWith(href + '/'));
  return <Link href={href} aria-current={current ? 'page' : undefined}>{children}</Link>;
}

function Sidebar() {
  const [location, navigate] = useLocation();
  const [, params] = useRoute<{ db: string; rest: string }>('/db/:db/*?');
  const current = params?.db ? decodeURIComponent(params.db) : '';
  const [names, setNames] = useState<string[]>([]);
  const [changed, setChanged] = useState(0);
  useEffect(() => {
    const onChange = () => setChanged((n) => n + 1);
    window.addEventListener(DatabasesChanged, onChange);
    return () => window.removeEventListener(DatabasesChanged, onChange);
  }, []);
  useEffect(() => {
    api.databases().then((r) => setNames(r.Databases.map((d) => d.Name)), () => setNames([]));
  }, [location, changed]);
  const section = params ? location.split('/')[3] ?? 'documents' : 'documents';
  const base = current ? `/db/${encodeURIComponent(current)}` : '';
  return (
    <aside class="side">
      <Link href="/" class="brand">RavenLite Studio</Link>
      <label for="db-select">Database</label>
      <select id="db-select" value={current} onChange={(e) => {
        const v = (e.target as HTMLSelectElement).value;
        navigate(v ? `/db/${encodeURIComponent(v)}/${['query', 'indexes', 'tasks', 'storage'].includes(section) ? section : 'documents'}` : '/');
      }}>
        <option value="">(choose a database)</option>
        {names.map((n) => <option key={n} value={n}>{n}</option>)}
      </select>
      <nav aria-label="Studio">
        <NavLink href="/">Databases</NavLink>
        {current && <NavLink href={`${base}/documents`}>Documents</NavLink>}
        {current && <NavLink href={`${base}/query`}>Query</NavLink>}
        {current && <NavLink href={`${base}/indexes`}>Indexes</NavLink>}
        {current && <NavLink href={`${base}/tasks`}>Tasks</NavLink>}
        {current && <NavLink href={`${base}/storage`}>Storage</NavLink>}
        <NavLink href="/cluster">Cluster</NavLink>
        <NavLink href="/dashboard">Dashboard</NavLink>
      </nav>
      <div class="hint">Ctrl+Enter runs a query or saves an editor.</div>
    </aside>
  );
}

export function App() {
  return (
    <Router base="/studio">
      <div class="shell">
        <Sidebar />
        <main id="main">
          <Suspense fallback={<p class="muted">Loading…</p>}>
            <Switch>
              <Route path="/" component={Databases} />
              <Route path="/dashboard" component={Dashboard} />
              <Route path="/cluster" component={Cluster} />
              <Route path="/db/:db/documents/:collection?">{(p) => <Documents db={decodeURIComponent(p.db)} collection={p.collection ? decodeURIComponent(p.collection) : undefined} />}</Route>
              <Route path="/db/:db/edit">{(p) => <DocumentEdit db={decodeURIComponent(p.db)} />}</Route>
              <Route path="/db/:db/query">{(p) => <Query db={decodeURIComponent(p.db)} />}</Route>
              <Route path="/db/:db/indexes/edit">{(p) => <IndexEdit db={decodeURIComponent(p.db)} />}</Route>
              <Route path="/db/:db/indexes">{(p) => <Indexes db={decodeURIComponent(p.db)} />}</Route>
              <Route path="/db/:db/tasks">{(p) => <Tasks db={decodeURIComponent(p.db)} />}</Route>
              <Route path="/db/:db/storage">{(p) => <Storage db={decodeURIComponent(p.db)} />}</Route>
              <Route path="/db/:db">{(p) => <Documents db={decodeURIComponent(p.db)} />}</Route>
              <Route><h1>Not found</h1><p>There is no such Studio page. <Link href="/">Go to the databases</Link>.</p></Route>
            </Switch>
          </Suspense>
        </main>
      </div>
    </Router>
  );
}

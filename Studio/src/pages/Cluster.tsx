import { useEffect, useState } from 'preact/hooks';
import { getJson, send } from '../api';
import { ErrorBox } from '../components/ErrorBox';

interface ClusterTopology {
  Topology: { TopologyId: string; AllNodes: Record<string, string>; Members: Record<string, string>; Watchers: Record<string, string>; Etag: number };
  Leader: string | null;
  NodeTag: string;
  CurrentTerm: number;
  CurrentState: string;
  Status: Record<string, { Connected: boolean }>;
}

interface GroupNode { ClusterTag: string; Url: string; ServerRole: string }
interface Group { Name: string; Nodes: GroupNode[]; Promotables: GroupNode[] }

/** The cluster (docs/cluster.md): its nodes with their role, the leader and who reaches whom; each database's group with its members' states; adding a node. */
export function Cluster() {
  const [topology, setTopology] = useState<ClusterTopology | null>(null);
  const [groups, setGroups] = useState<Group[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [url, setUrl] = useState('');
  const [watcher, setWatcher] = useState(false);
  const [adding, setAdding] = useState(false);
  const [added, setAdded] = useState<string | null>(null);
  const [reload, setReload] = useState(0);

  useEffect(() => {
    let stopped = false;
    async function load() {
      if (document.visibilityState !== 'visible') return;
      try {
        const t = await getJson<ClusterTopology>('/cluster/topology');
        const names = (await getJson<{ Databases: { Name: string }[] }>('/databases')).Databases.map((d) => d.Name);
        const g = await Promise.all(names.map(async (name) => ({ Name: name, ...(await getJson<{ Nodes: GroupNode[]; Promotables: GroupNode[] }>(`/topology?name=${encodeURIComponent(name)}`)) })));
        if (stopped) return;
        setTopology(t);
        setGroups(g);
        setError(null);
      } catch (e) {
        if (!stopped) setError(e);
      }
    }
    load();
    const timer = setInterval(load, 2000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [reload]);

  async function addNode(e: Event) {
    e.preventDefault();
    setAdding(true);
    setAdded(null);
    try {
      const r = await send<{ Tag: string }>('PUT', `/admin/cluster/node?url=${encodeURIComponent(url.trim())}${watcher ? '&watcher=true' : ''}`);
      setAdded(`Added ${url.trim()} as node ${r.Tag}.`);
      setUrl('');
      setError(null);
      setReload((n) => n + 1);
    } catch (err) {
      setError(err);
    } finally {
      setAdding(false);
    }
  }

  const nodes = topology ? Object.entries(topology.Topology.AllNodes) : [];
  return (
    <section>
      <h1>Cluster</h1>
      <ErrorBox error={error} />
      {topology && (
        <p>
          This is node <strong>{topology.NodeTag}</strong> ({topology.CurrentState}); leader: <strong>{topology.Leader ?? 'none (election under way, or no majority)'}</strong>; term {topology.CurrentTerm}.
        </p>
      )}
      <table class="data" aria-label="Nodes">
        <thead>
          <tr><th scope="col">Node</th><th scope="col">URL</th><th scope="col">Role</th><th scope="col">Leader</th><th scope="col">Reachable from the leader</th></tr>
        </thead>
        <tbody>
          {nodes.map(([tag, nodeUrl]) => {
            const isWatcher = topology!.Topology.Watchers[tag] !== undefined;
            const status = topology!.Status[tag];
            const reach = tag === topology!.NodeTag ? 'this node' : topology!.CurrentState !== 'Leader' ? 'ask the leader' : status?.Connected ? 'yes' : 'no';
            return (
              <tr key={tag} data-node={tag}>
                <td>{tag}</td>
                <td><a href={`${nodeUrl}/studio/cluster`}>{nodeUrl}</a></td>
                <td>{isWatcher ? 'Watcher' : 'Member'}</td>
                <td>{topology!.Leader === tag ? 'Leader' : ''}</td>
                <td>{reach}</td>
              </tr>
            );
          })}
        </tbody>
      </table>

      <h2>Add a node</h2>
      <form class="toolbar panel" onSubmit={addNode} aria-label="Add a node">
        <label for="node-url">Server URL</label>
        <input id="node-url" type="url" required placeholder="http://127.0.0.1:8081" value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
        <label><input type="checkbox" checked={watcher} onChange={(e) => setWatcher((e.target as HTMLInputElement).checked)} /> as a watcher</label>
        <button class="primary" type="submit" disabled={adding || !url.trim()}>{adding ? 'Adding…' : 'Add node'}</button>
      </form>
      {added && <div class="notice" role="status">{added}</div>}

      <h2>Database groups</h2>
      <table class="data" aria-label="Database groups">
        <thead>
          <tr><th scope="col">Database</th><th scope="col">Nodes (in the clients' order)</th></tr>
        </thead>
        <tbody>
          {groups.map((g) => (
            <tr key={g.Name} data-database={g.Name}>
              <td>{g.Name}</td>
              <td>{[...g.Nodes, ...(g.Promotables ?? [])].map((n) => `${n.ClusterTag} (${n.ServerRole})`).join(', ')}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

import { useState } from 'preact/hooks';
import { api, type Subscription } from '../api';
import { ErrorBox } from '../components/ErrorBox';
import { confirmAction } from '../components/Confirm';
import { usePolled } from '../hooks/usePolled';
import { utc as when } from '../format';
import { actOn } from '../hooks/actOn';


/** The database's data subscriptions: each one's state, live; created from an RQL query, disabled, enabled, its worker dropped, deleted. */
export function Subscriptions({ db }: { db: string }) {
  const [list, setList] = useState<Subscription[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [name, setName] = useState('');
  const [query, setQuery] = useState('from Orders');
  const refresh = usePolled(async (signal) => setList(await api.subscriptions(db, signal)), db, setError);

  const act = actOn(refresh, setError);
  async function create(e: Event) {
    e.preventDefault();
    await act(async () => {
      await api.createSubscription(db, name.trim(), query.trim());
      setName('');
    });
  }
  async function remove(s: Subscription) {
    if (await confirmAction({ title: 'Delete subscription?', message: `"${s.SubscriptionName}" and its position are deleted; a worker connected to it is dropped.`, confirm: 'Delete', danger: true }))
      await act(() => api.deleteSubscription(db, s.SubscriptionName));
  }

  return (
    <div class="panel" style={{ marginTop: '12px' }}>
      <h2 style={{ marginTop: 0 }}>Subscriptions</h2>
      {list && list.length === 0 && <p class="muted">No subscriptions. A client's subscription worker processes the documents a subscription's query matches, in batches, from where it left off.</p>}
      {list && list.length > 0 && (
        <table class="data" aria-label="Subscriptions">
          <thead><tr><th>Name</th><th>Query</th><th>State</th><th>Last batch acknowledged</th><th>Last connection</th><th>Actions</th></tr></thead>
          <tbody>
            {list.map((s) => (
              <tr key={s.SubscriptionId}>
                <td>{s.SubscriptionName}</td>
                <td><code>{s.Query}</code></td>
                <td role="status" aria-label={`State of ${s.SubscriptionName}`}>
                  <span class={'badge ' + (s.Disabled ? 'warn' : s.Connected ? 'ok' : '')}>{s.Disabled ? 'Disabled' : s.Connected ? 'Worker connected' : 'No worker'}</span>
                </td>
                <td>{when(s.LastBatchAckTime)}</td>
                <td>{when(s.LastClientConnectionTime)}</td>
                <td>
                  <button onClick={() => act(() => api.toggleSubscription(db, s.SubscriptionName, !s.Disabled))}>{s.Disabled ? 'Enable' : 'Disable'}</button>{' '}
                  <button onClick={() => act(() => api.dropSubscriptionWorker(db, s.SubscriptionName))} disabled={!s.Connected}>Drop worker</button>{' '}
                  <button class="danger" onClick={() => remove(s)}>Delete</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form onSubmit={create} class="toolbar" style={{ marginTop: '8px', flexWrap: 'wrap' }} aria-label="Add subscription">
        <label>Name <input value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} placeholder="(generated)" aria-label="Subscription name" /></label>
        <label>Query <input value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} required size={48} aria-label="Subscription query (RQL)" /></label>
        <button class="primary" type="submit">Add subscription</button>
      </form>
      <ErrorBox error={error} context="Subscriptions" />
    </div>
  );
}

import { useState } from 'preact/hooks';
import { db as dbUrl, getJson, send } from '../api';
import { ErrorBox } from '../components/ErrorBox';
import { confirmAction } from '../components/Confirm';
import { usePolled } from '../hooks/usePolled';
import { utc as when } from '../format';

interface BackupTask {
  TaskId: number;
  TaskName: string;
  TaskType: string;
  TaskState: 'Enabled' | 'Disabled';
  BackupType: string;
  LastFullBackup: string | null;
  LastIncrementalBackup: string | null;
  NextBackup: { DateTime: string; IsFull: boolean } | null;
}

interface Operation {
  Status: 'InProgress' | 'Completed' | 'Faulted' | 'Canceled';
  Result: { LocalBackup?: { BackupDirectory?: string }; Message?: string; Error?: string } | null;
}


/** Polls an operation (of the database, or of the server with db null) until it ends; what it ended with. */
async function finished(db: string | null, id: number): Promise<Operation> {
  for (;;) {
    const state = await getJson<Operation>(`${db === null ? '' : dbUrl(db)}/operations/state?id=${id}`);
    if (state.Status !== 'InProgress') return state;
    await new Promise((r) => setTimeout(r, 300));
  }
}

function failure(state: Operation): Error {
  return new Error(state.Result?.Message ?? state.Result?.Error ?? `The operation ended ${state.Status}.`);
}

/** Backups of the database: one now (a backup or a snapshot into a folder), periodic tasks on cron schedules, and a restore into a new database. */
export function Backups({ db }: { db: string }) {
  const [tasks, setTasks] = useState<BackupTask[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [folder, setFolder] = useState('');
  const [type, setType] = useState('Backup');
  const [busy, setBusy] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [taskName, setTaskName] = useState('');
  const [full, setFull] = useState('0 2 * * *');
  const [incremental, setIncremental] = useState('');
  const [from, setFrom] = useState('');
  const [into, setInto] = useState('');
  const refresh = usePolled(async (signal) => {
    const answer = await getJson<{ OngoingTasks: BackupTask[] }>(`${dbUrl(db)}/tasks`, signal);
    setTasks(answer.OngoingTasks.filter((t) => t.TaskType === 'Backup'));
  }, db, setError);

  async function run(label: string, work: () => Promise<string | null>) {
    setError(null);
    setDone(null);
    setBusy(label);
    try {
      setDone(await work());
      refresh();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  }
  const backUpNow = (e: Event) => {
    e.preventDefault();
    return run('Backing up…', async () => {
      const { OperationId } = await send<{ OperationId: number }>('POST', `${dbUrl(db)}/admin/backup`, { BackupType: type, LocalSettings: { FolderPath: folder.trim() } });
      const state = await finished(db, OperationId);
      if (state.Status !== 'Completed') throw failure(state);
      const where = state.Result?.LocalBackup?.BackupDirectory ?? folder.trim();
      setFrom(where);
      return `${type === 'Snapshot' ? 'Snapshot' : 'Backup'} written to ${where}.`;
    });
  };
  const addTask = (e: Event) => {
    e.preventDefault();
    return run('Saving the task…', async () => {
      await send('POST', `${dbUrl(db)}/admin/periodic-backup`, {
        Name: taskName.trim() || undefined, BackupType: type, LocalSettings: { FolderPath: folder.trim() },
        FullBackupFrequency: full.trim(), IncrementalBackupFrequency: incremental.trim() || null,
      });
      setTaskName('');
      return 'Periodic backup saved.';
    });
  };
  const restore = (e: Event) => {
    e.preventDefault();
    return run('Restoring…', async () => {
      const { OperationId } = await send<{ OperationId: number }>('POST', '/admin/restore/database', { DatabaseName: into.trim(), BackupLocation: from.trim() });
      const state = await finished(null, OperationId);
      if (state.Status !== 'Completed') throw failure(state);
      return `Restored into the new database ${into.trim()}.`;
    });
  };
  const runTask = (t: BackupTask) => run(`Running ${t.TaskName}…`, async () => {
    const { OperationId } = await send<{ OperationId: number }>('POST', `${dbUrl(db)}/admin/backup/database?isFullBackup=true&taskId=${t.TaskId}`);
    const state = await finished(db, OperationId);
    if (state.Status !== 'Completed') throw failure(state);
    return `${t.TaskName}: a full backup written to ${state.Result?.LocalBackup?.BackupDirectory ?? 'its folder'}.`;
  });
  async function remove(t: BackupTask) {
    if (await confirmAction({ title: 'Delete backup task?', message: `"${t.TaskName}" stops backing up on its schedule. The backups it wrote stay in their folder.`, confirm: 'Delete', danger: true }))
      await run('Deleting…', async () => { await send('DELETE', `${dbUrl(db)}/admin/tasks?id=${t.TaskId}&type=Backup`); return null; });
  }

  return (
    <div class="panel" style={{ marginTop: '12px' }}>
      <h2 style={{ marginTop: 0 }}>Backups</h2>
      <form class="toolbar" style={{ flexWrap: 'wrap' }} aria-label="Back up" onSubmit={backUpNow}>
        <label>Folder on the server <input value={folder} onInput={(e) => setFolder((e.target as HTMLInputElement).value)} required size={36} aria-label="Backup folder" /></label>
        <label>Kind <select value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)} aria-label="Backup kind">
          <option value="Backup">Backup (documents and indexes' definitions)</option>
          <option value="Snapshot">Snapshot (the database's pages, indexes built)</option>
        </select></label>
        <button class="primary" type="submit" disabled={busy !== null}>Back up now</button>
      </form>
      {tasks && tasks.length === 0 && <p class="muted">No periodic backups.</p>}
      {tasks && tasks.length > 0 && (
        <table class="data" aria-label="Periodic backups">
          <thead><tr><th>Task</th><th>Kind</th><th>Last full backup</th><th>Next</th><th>Actions</th></tr></thead>
          <tbody>
            {tasks.map((t) => (
              <tr key={t.TaskId}>
                <td>{t.TaskName}</td>
                <td>{t.BackupType}</td>
                <td role="status" aria-label={`Last full backup of ${t.TaskName}`}>{when(t.LastFullBackup)}</td>
                <td>{t.TaskState === 'Disabled' ? 'disabled' : t.NextBackup ? `${when(t.NextBackup.DateTime)} (${t.NextBackup.IsFull ? 'full' : 'incremental'})` : '–'}</td>
                <td>
                  <button onClick={() => runTask(t)} disabled={busy !== null}>Run now</button>{' '}
                  <button class="danger" onClick={() => remove(t)}>Delete</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form class="toolbar" style={{ marginTop: '8px', flexWrap: 'wrap' }} aria-label="Add periodic backup" onSubmit={addTask}>
        <label>Name <input value={taskName} onInput={(e) => setTaskName((e.target as HTMLInputElement).value)} placeholder="(generated)" aria-label="Periodic backup name" /></label>
        <label>Full backups (cron) <input value={full} onInput={(e) => setFull((e.target as HTMLInputElement).value)} required size={12} aria-label="Full backup schedule (cron)" /></label>
        <label>Incremental (cron) <input value={incremental} onInput={(e) => setIncremental((e.target as HTMLInputElement).value)} size={12} placeholder="(none)" aria-label="Incremental backup schedule (cron)" /></label>
        <button type="submit" disabled={busy !== null || folder.trim() === ''} title="Uses the folder and kind above">Add periodic backup</button>
      </form>
      <form class="toolbar" style={{ marginTop: '8px', flexWrap: 'wrap' }} aria-label="Restore" onSubmit={restore}>
        <label>Restore from <input value={from} onInput={(e) => setFrom((e.target as HTMLInputElement).value)} required size={36} aria-label="Backup to restore (its folder)" /></label>
        <label>into the new database <input value={into} onInput={(e) => setInto((e.target as HTMLInputElement).value)} required aria-label="New database name" /></label>
        <button type="submit" disabled={busy !== null}>Restore</button>
      </form>
      {busy && <div class="progress" role="progressbar" aria-label={busy} style={{ marginTop: '8px' }}><div style={{ width: '100%' }} /></div>}
      {done && <div class="notice" role="status">{done}</div>}
      <ErrorBox error={error} context="Backups" />
    </div>
  );
}

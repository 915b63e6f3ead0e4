// The server's HTTP API as the Studio uses it. Every failure becomes an ApiError with a message a person can
// read: the server's own error text for a 4xx/5xx, "the server is not reachable" when the request never got an answer.

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly type?: string,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

async function request(method: string, url: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
  let response: Response;
  try {
    const raw = body instanceof Blob; // a file's bytes (an attachment upload) go as they are
    response = await fetch(url, {
      method,
      signal,
      headers: body === undefined || raw ? undefined : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : raw || typeof body === 'string' ? (body as BodyInit) : JSON.stringify(body),
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError('The server is not reachable. Is it running? (' + (e as Error).message + ')', 0);
  }
  if (!response.ok) {
    let parsed: Json = undefined;
    let text = '';
    try {
      text = await response.text();
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: the text is the message
    }
    const message = parsed?.Message ?? parsed?.Error ?? (text || `${response.status} ${response.statusText}`);
    throw new ApiError(String(message), response.status, parsed?.Type, parsed);
  }
  return response;
}

export async function getJson<T = Json>(url: string, signal?: AbortSignal): Promise<T> {
  const r = await request('GET', url, undefined, signal);
  return r.status === 204 ? (undefined as T) : ((await r.json()) as T);
}

export async function send<T = Json>(method: string, url: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const r = await request(method, url, body, signal);
  const text = await r.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

const enc = encodeURIComponent;

/** Query parameters typed as JSON in an editor: the object, or an Error saying what is wrong. */
export function parseParameters(text: string): unknown {
  try {
    return JSON.parse(text || '{}');
  } catch (e) {
    return new Error('Query parameters are not valid JSON: ' + (e as Error).message);
  }
}

/** Window event sent after a database is created or deleted (the sidebar lists them again). */
export const DatabasesChanged = 'ravenlite:databases';
export const db = (name: string) => `/databases/${enc(name)}`;

export interface DatabaseStats {
  CountOfDocuments: number;
  CountOfIndexes: number;
  LastDocEtag: number;
  SizeOnDisk: { HumaneSize: string; SizeInBytes: number };
  Indexes: { Name: string; IsStale: boolean; State: string; Type: string }[];
  Storage?: { DataFileBytes: number; JournalBytesWritten: number; Commits: number; Flushes: number; PagesWaitingForFlush: number };
  Merger?: { Transactions: number; Operations: number; Requests: number };
  Process?: { ManagedHeapBytes: number; AllocatedBytes: number; GcTotalPauseMs: number };
}

export interface IndexStats {
  Name: string;
  Type: string;
  State: string;
  IsStale: boolean;
  EntriesCount: number;
  ErrorsCount: number;
  MapAttempts?: number;
  MapSuccesses?: number;
  MapErrors?: number;
  Collections?: Record<string, { LastProcessedDocumentEtag: number; DocumentLag: number }>;
  LastIndexingTime?: string;
}

export interface QueryResult {
  Results: Json[];
  Includes?: Json;
  TotalResults: number;
  LongTotalResults?: number;
  SkippedResults: number;
  IsStale: boolean;
  IndexName: string;
  DurationInMs: number;
  ResultEtag?: number;
}

export const api = {
  databases: () => getJson<{ Databases: { Name: string; Disabled: boolean }[] }>('/databases'),
  stats: (name: string, signal?: AbortSignal) => getJson<DatabaseStats>(`${db(name)}/stats`, signal),
  createDatabase: (name: string) => send('PUT', `/admin/databases?name=${enc(name)}`, { DatabaseName: name }),
  deleteDatabase: (name: string) => send('DELETE', `/admin/databases?name=${enc(name)}&hardDelete=true`, { DatabaseNames: [name], HardDelete: true }),
  sampleData: (name: string) => send('POST', `${db(name)}/studio/sample-data`),
  collections: (name: string) => getJson<{ CountOfDocuments: number; Collections: Record<string, number> }>(`${db(name)}/collections/stats`),
  collectionPage: (name: string, collection: string, start: number, pageSize: number, signal?: AbortSignal) =>
    getJson<{ Results: Json[] }>(`${db(name)}/collections/docs?name=${enc(collection)}&start=${start}&pageSize=${pageSize}`, signal),
  allDocsPage: (name: string, start: number, pageSize: number, signal?: AbortSignal) =>
    getJson<{ Results: Json[] }>(`${db(name)}/docs?start=${start}&pageSize=${pageSize}`, signal),
  getDocument: async (name: string, id: string): Promise<Json | null> => {
    try {
      const r = await getJson<{ Results: Json[] }>(`${db(name)}/docs?id=${enc(id)}`);
      return r.Results[0] ?? null;
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return null;
      throw e;
    }
  },
  putDocument: (name: string, id: string, doc: Json) =>
    send('PUT', `${db(name)}/docs?id=${enc(id)}`, doc, undefined).then((r) => r as { Id: string; ChangeVector: string }),
  counters: (name: string, id: string) =>
    getJson<{ Counters: ({ CounterName: string; TotalValue: number } | null)[] }>(`${db(name)}/counters?docId=${enc(id)}`),
  incrementCounter: (name: string, id: string, counter: string, delta: number) =>
    send('POST', `${db(name)}/counters`, { Documents: [{ DocumentId: id, Operations: [{ Type: 'Increment', CounterName: counter, Delta: delta }] }] }),
  timeSeriesStats: (name: string, id: string) =>
    getJson<{ TimeSeries: { Name: string; NumberOfEntries: number; StartDate: string; EndDate: string }[] }>(`${db(name)}/timeseries/stats?docId=${enc(id)}`),
  revisionsCount: (name: string, id: string) => getJson<{ RevisionsCount: number }>(`${db(name)}/revisions/count?id=${enc(id)}`),
  attachmentUrl: (name: string, id: string, attachment: string) => `${db(name)}/attachments?id=${enc(id)}&name=${enc(attachment)}`,
  putAttachment: (name: string, id: string, attachment: string, file: Blob) =>
    send('PUT', `${db(name)}/attachments?id=${enc(id)}&name=${enc(attachment)}&contentType=${enc(file.type || 'application/octet-stream')}`, file),
  deleteAttachment: (name: string, id: string, attachment: string) => send('DELETE', `${db(name)}/attachments?id=${enc(id)}&name=${enc(attachment)}`),
  deleteDocuments: (name: string, ids: string[]) =>
    send('POST', `${db(name)}/bulk_docs`, { Commands: ids.map((id) => ({ Id: id, Type: 'DELETE', ChangeVector: null })) }),
  query: (name: string, query: string, parameters: Json, start: number, pageSize: number, signal?: AbortSignal) =>
    send<QueryResult>('POST', `${db(name)}/queries`, { Query: query, QueryParameters: parameters, Start: start, PageSize: pageSize }, signal),
  indexes: (name: string) => getJson<{ Results: Json[] }>(`${db(name)}/indexes`),
  indexStats: (name: string) => getJson<{ Results: IndexStats[] }>(`${db(name)}/indexes/stats`),
  indexErrors: (name: string) => getJson<{ Results: { Name: string; Errors: { Document: string | null; Error: string; Timestamp: string }[] }[] }>(`${db(name)}/indexes/errors`),
  putIndex: (name: string, definition: Json) => send('PUT', `${db(name)}/admin/indexes`, { Indexes: [definition] }),
  resetIndex: (name: string, index: string) => send('POST', `${db(name)}/indexes/reset?name=${enc(index)}`),
  deleteIndex: (name: string, index: string) => send('DELETE', `${db(name)}/indexes?name=${enc(index)}`),
  patchByQuery: (name: string, query: string, parameters: Json) =>
    send<{ OperationId: number }>('PATCH', `${db(name)}/queries`, { Query: { Query: query, QueryParameters: parameters } }),
  deleteByQuery: (name: string, query: string, parameters: Json) =>
    send<{ OperationId: number }>('DELETE', `${db(name)}/queries`, { Query: query, QueryParameters: parameters }),
  operationState: (name: string, id: number) => getJson<OperationState>(`${db(name)}/operations/state?id=${id}`),
  killOperation: (name: string, id: number) => send('POST', `${db(name)}/operations/kill?id=${id}`),
  replicationTasks: (name: string, signal?: AbortSignal) => getJson<{ OngoingTasks: ReplicationTask[] }>(`${db(name)}/tasks`, signal),
  replicationConflicts: (name: string, signal?: AbortSignal) => getJson<{ TotalResults: number; Results: { Id: string; ConflictsPerDocument: number }[] }>(`${db(name)}/replication/conflicts`, signal),
  addReplication: async (name: string, destinationUrl: string, destinationDb: string, delay: string) => {
    const csName = `to-${destinationDb}@${destinationUrl.replace(/^https?:\/\//, '')}`;
    await send('PUT', `${db(name)}/admin/connection-strings`, { Name: csName, Database: destinationDb, TopologyDiscoveryUrls: [destinationUrl], Type: 'Raven' });
    return send<{ TaskId: number }>('POST', `${db(name)}/admin/tasks/external-replication`, { Watcher: { Name: `Replication to ${destinationDb}`, ConnectionStringName: csName, DelayReplicationFor: delay || '00:00:00' } });
  },
  toggleReplication: (name: string, taskId: number, disable: boolean) => send('POST', `${db(name)}/admin/tasks/state?key=${taskId}&type=Replication&disable=${disable}`),
  deleteReplication: (name: string, taskId: number) => send('DELETE', `${db(name)}/admin/tasks?id=${taskId}&type=Replication`),
  etlTasks: async (name: string, signal?: AbortSignal) =>
    (await getJson<{ OngoingTasks: EtlTask[] }>(`${db(name)}/tasks`, signal)).OngoingTasks.filter((t) => t.TaskType === 'RavenEtl' || t.TaskType === 'SqlEtl'),
  toggleEtl: (name: string, t: EtlTask, disable: boolean) => send('POST', `${db(name)}/admin/tasks/state?key=${t.TaskId}&type=${t.TaskType}&disable=${disable}`),
  resetEtl: (name: string, t: EtlTask, transformation: string) =>
    send('RESET', `${db(name)}/admin/etl?configurationName=${enc(t.TaskName)}&transformationName=${enc(transformation)}`),
  deleteEtl: (name: string, t: EtlTask) => send('DELETE', `${db(name)}/admin/tasks?id=${t.TaskId}&type=${t.TaskType}`),
  subscriptions: async (name: string, signal?: AbortSignal) =>
    (await getJson<{ Results: Subscription[] }>(`${db(name)}/subscriptions`, signal)).Results,
  createSubscription: (name: string, subscription: string, query: string) =>
    send<{ Name: string }>('PUT', `${db(name)}/subscriptions`, { Name: subscription || undefined, Query: query }),
  toggleSubscription: (name: string, subscription: string, disable: boolean) =>
    send('POST', `${db(name)}/admin/tasks/state?taskName=${enc(subscription)}&type=Subscription&disable=${disable}`),
  dropSubscriptionWorker: (name: string, subscription: string) => send('POST', `${db(name)}/subscriptions/drop?name=${enc(subscription)}`),
  deleteSubscription: (name: string, subscription: string) => send('DELETE', `${db(name)}/subscriptions?taskName=${enc(subscription)}`),
  metrics: (signal?: AbortSignal) => getJson<ServerMetrics>('/studio-api/metrics', signal),
};

/** A data subscription as GET /databases/{db}/subscriptions answers it (RavenDB's SubscriptionState; Connected is RavenLite's). */
export interface Subscription {
  SubscriptionId: number;
  SubscriptionName: string;
  Query: string;
  Disabled: boolean;
  Connected: boolean;
  ChangeVectorForNextBatchStartingPoint: string | null;
  LastBatchAckTime: string | null;
  LastClientConnectionTime: string | null;
}

export interface ServerMetrics {
  Time: string;
  Requests: number;
  RequestsLastSecond: number;
  RequestP99Ms: number;
  RequestP50Ms: number;
  ManagedHeapBytes: number;
  WorkingSetBytes: number;
  Databases: {
    Name: string;
    LastDocEtag: number;
    IndexedDocuments: number;
    IndexLag: number;
    DataFileBytes: number;
    JournalBytesWritten: number;
    Commits: number;
  }[];
}

export interface OperationState {
  Status: 'InProgress' | 'Completed' | 'Faulted' | 'Canceled';
  Result: { Total?: number; DocumentsProcessed?: number; DocumentsSkipped?: number; Message?: string; Type?: string } | null;
  Progress: { Processed: number; Total?: number } | null;
}

/** A replication task as GET /databases/{db}/tasks answers it (RavenDB's OngoingTaskReplication plus RavenLite's progress). */
export interface ReplicationTask {
  TaskId: number;
  TaskName: string;
  TaskState: 'Enabled' | 'Disabled';
  TaskConnectionStatus: 'Active' | 'Reconnect' | 'NotActive';
  Error: string | null;
  DestinationDatabase: string | null;
  TopologyDiscoveryUrls: string[];
  DelayReplicationFor: string;
  LastAcknowledgedEtag: number;
  LastDatabaseEtag: number;
  EtagLag: number;
  TimeLagMs: number;
}

/** An ETL task as GET /databases/{db}/tasks answers it (RavenDB's OngoingTaskRavenEtl / OngoingTaskSqlEtl plus RavenLite's progress per transformation). */
export interface EtlTask {
  TaskId: number;
  TaskType: 'RavenEtl' | 'SqlEtl';
  TaskName: string;
  TaskState: 'Enabled' | 'Disabled' | 'PartiallyEnabled';
  TaskConnectionStatus: 'Active' | 'Reconnect' | 'NotActive' | 'NotOnThisNode';
  Error: string | null;
  ConnectionStringName: string;
  DestinationDatabase: string | null;
  DestinationUrl?: string | null;
  DestinationServer?: string | null;
  Transformations: {
    Name: string;
    State: string;
    LastProcessedEtag?: number;
    EtagLag?: number;
    TimeLagMs?: number;
    Loaded?: number;
    FailedBatches?: number;
    LastBatchAt?: string | null;
    Error?: string | null;
  }[];
}

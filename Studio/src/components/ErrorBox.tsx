import { ApiError } from '../api';

/** A failed request as a readable message (never a blank page). */
export function ErrorBox({ error, context }: { error: unknown; context?: string }) {
  if (!error) return null;
  const message = error instanceof ApiError
    ? (error.status ? `${error.status}: ` : '') + error.message
    : error instanceof Error ? error.message : String(error);
  return <div class="error" role="alert">{context ? `${context}: ` : ''}{message}</div>;
}

/**
 * A change a panel makes on the server: clears the panel's last error, runs the change, then refreshes the panel's
 * polled view; a failure is shown as the panel's error instead.
 */
export function actOn(refresh: () => void, setError: (e: unknown) => void) {
  return async (run: () => Promise<unknown>) => {
    setError(null);
    try {
      await run();
      refresh();
    } catch (e) {
      setError(e);
    }
  };
}

// A bound on how long one operation may stay pending in a test, for assertions that something
// fails (or succeeds) at once rather than after retries.

/** Settles as `op` does, or rejects with `what` once `ms` passed with `op` still pending. */
export async function withDeadline<T>(op: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still pending after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([op, late]);
  } finally {
    clearTimeout(timer);
  }
}

// Small pieces the pages share: the page props, an error line, "unknown" cells, a confirmation
// dialog and the time format.
import type { ComponentChildren } from 'preact';
import type { Overview } from './api.js';

/** What every page gets from the app. */
export interface PageProps {
  readonly overview: Overview;
  /** The query of the hash route, e.g. `#/dead-letters?address=x.info`. */
  readonly query: URLSearchParams;
}

export function ErrorNote({ error }: { error: Error }) {
  return (
    <p class="error" role="alert">
      {error.message}
    </p>
  );
}

/** A number, or the words for "the driver cannot tell" / "not known yet". */
export function Num({ value, unknown = 'unknown' }: { value: number | null | undefined; unknown?: string }) {
  return value === undefined || value === null ? <span class="muted">{unknown}</span> : <>{value}</>;
}

export function Note({ children }: { children: ComponentChildren }) {
  return <p class="note">{children}</p>;
}

/** A modal question with Confirm / Cancel; the confirm button is `confirm-button`. */
export function Confirm({ text, onConfirm, onCancel }: { text: string; onConfirm: () => void; onCancel: () => void }) {
  return (
    <div class="backdrop">
      <div class="dialog" role="dialog" aria-modal="true">
        <p>{text}</p>
        <div class="actions">
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
          <button type="button" class="danger" data-testid="confirm-button" onClick={onConfirm}>
            Confirm
          </button>
        </div>
      </div>
    </div>
  );
}

/** Local time of an ISO string or epoch ms, to the second. */
export function time(at: string | number): string {
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? String(at) : d.toLocaleString(undefined, { hour12: false });
}

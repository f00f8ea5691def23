// Dead letters of one address: error, deliveries, consumer and time per letter, the body on
// demand; Replay and Purge (only when the console allows writes) each behind a confirmation and
// sent with the token the operator typed (kept in sessionStorage for this tab, never served).
import { useState } from 'preact/hooks';
import { get, post, type DeadLetterRow } from '../api.js';
import { usePoll } from '../poll.js';
import { Confirm, ErrorNote, Note, time, type PageProps } from '../widgets.js';

const PRIORITIES = ['audit', 'debug', 'info', 'warn', 'error', 'critical', 'sample'];
const TOKEN_KEY = 'tidings-console-token';

type Action = { kind: 'replay' | 'purge'; ids?: string[] };

/**
 * A letter's body, fetched on demand. The page keeps what was fetched (`body`, `onBody`): another
 * client listing the queue takes its letters for a moment, a poll then misses the row, and the row
 * that comes back shows the body it showed before.
 */
function Body({ address, id, body, onBody }: { address: string; id: string; body: string | undefined; onBody: (body: string) => void }) {
  const [error, setError] = useState<Error | undefined>(undefined);
  if (body !== undefined) return <pre class="body">{pretty(body)}</pre>;
  return (
    <>
      <button type="button" class="link" data-testid="body-button" onClick={() => get<{ body: string }>('dead-letters/body', { address, id }).then((b) => onBody(b.body), setError)}>
        Show body
      </button>
      {error && <ErrorNote error={error} />}
    </>
  );
}

/** The body indented; an oslo envelope's `oslo.message` (JSON in a string) is shown decoded. */
function pretty(text: string): string {
  try {
    const body = JSON.parse(text);
    if (body && typeof body['oslo.message'] === 'string') body['oslo.message'] = JSON.parse(body['oslo.message']);
    return JSON.stringify(body, null, 2);
  } catch {
    return text;
  }
}

export function DeadLettersPage({ overview, query }: PageProps) {
  const addresses = overview.notificationTopics.flatMap((t) => PRIORITIES.map((p) => `${t}.${p}`));
  const [address, setAddress] = useState(query.get('address') ?? addresses.find((a) => a.endsWith('.info')) ?? '');
  const [token, setToken] = useState(() => sessionStorage.getItem(TOKEN_KEY) ?? '');
  const [asking, setAsking] = useState<Action | undefined>(undefined);
  const [outcome, setOutcome] = useState<string | undefined>(undefined);
  const [writeError, setWriteError] = useState<Error | undefined>(undefined);
  const [bodies, setBodies] = useState<ReadonlyMap<string, string>>(new Map());
  const letters = usePoll(
    async () => (address === '' ? [] : (await get<{ letters: DeadLetterRow[] }>('dead-letters', { address })).letters),
    overview.refreshMs,
    [address],
  );

  const keepToken = (value: string) => {
    setToken(value);
    sessionStorage.setItem(TOKEN_KEY, value);
  };
  const run = async ({ kind, ids }: Action) => {
    setAsking(undefined);
    setOutcome(undefined);
    setWriteError(undefined);
    try {
      const body = ids ? { address, ids } : { address, all: true };
      const result = await post<{ replayed?: number; purged?: number }>(`dead-letters/${kind}`, body, token);
      setOutcome(kind === 'replay' ? `Replayed ${result.replayed ?? 0}.` : `Purged ${result.purged ?? 0}.`);
    } catch (err) {
      setWriteError(err as Error);
    }
    setBodies(new Map());
    letters.reload();
  };
  const question = (a: Action) => {
    const what = a.ids ? `${a.ids.length} dead letter${a.ids.length === 1 ? '' : 's'}` : 'all dead letters';
    return a.kind === 'replay' ? `Replay ${what} of ${address}? They go back to their pool.` : `Purge ${what} of ${address}? They are deleted for good.`;
  };
  const rows = letters.data ?? [];
  const bodyKey = (id: string) => `${address}\u0000${id}`;
  const keepBody = (id: string, body: string) => setBodies((had) => new Map(had).set(bodyKey(id), body));

  return (
    <>
      <h2>Dead letters</h2>
      <div class="controls">
        <label>
          Address{' '}
          <input list="addresses" value={address} data-testid="address-input" placeholder="topic.priority" onChange={(e) => setAddress((e.target as HTMLInputElement).value.trim())} />
        </label>
        <datalist id="addresses">
          {addresses.map((a) => (
            <option key={a} value={a} />
          ))}
        </datalist>
        {overview.writable && (
          <label>
            Token{' '}
            <input type="password" autocomplete="off" value={token} data-testid="token-input" placeholder="printed at start" onInput={(e) => keepToken((e.target as HTMLInputElement).value)} />
          </label>
        )}
        {overview.writable && rows.length > 0 && (
          <>
            <button type="button" data-testid="replay-all-button" onClick={() => setAsking({ kind: 'replay' })}>
              Replay all
            </button>
            <button type="button" class="danger" data-testid="purge-all-button" onClick={() => setAsking({ kind: 'purge' })}>
              Purge all
            </button>
          </>
        )}
      </div>
      {!overview.writable && <Note>Read-only: start the console with --allow-write to replay or purge.</Note>}
      {outcome && <p class="ok">{outcome}</p>}
      {writeError && <ErrorNote error={writeError} />}
      {letters.error && <ErrorNote error={letters.error} />}
      {address !== '' && (
        <table>
          <thead>
            <tr>
              <th>Error</th>
              <th class="num">Deliveries</th>
              <th>Pool</th>
              <th>Consumer</th>
              <th>Dead since</th>
              <th>Body</th>
              {overview.writable && <th />}
            </tr>
          </thead>
          <tbody>
            {letters.data && rows.length === 0 && (
              <tr>
                <td colSpan={7} class="muted">
                  No dead letters on {address}.
                </td>
              </tr>
            )}
            {rows.map((l) => (
              <tr key={l.id} data-testid="dead-letter-row" data-id={l.id}>
                <td class="error-text">{l.error}</td>
                <td class="num">{l.deliveries}</td>
                <td>{l.pool ?? <span class="muted">unknown</span>}</td>
                <td>{l.consumer ?? <span class="muted">unknown</span>}</td>
                <td>{time(l.deadAt)}</td>
                <td>
                  <Body address={address} id={l.id} body={bodies.get(bodyKey(l.id))} onBody={(body) => keepBody(l.id, body)} />
                </td>
                {overview.writable && (
                  <td class="actions">
                    <button type="button" data-testid="replay-button" onClick={() => setAsking({ kind: 'replay', ids: [l.id] })}>
                      Replay
                    </button>
                    <button type="button" class="danger" data-testid="purge-button" onClick={() => setAsking({ kind: 'purge', ids: [l.id] })}>
                      Purge
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {asking && <Confirm text={question(asking)} onConfirm={() => void run(asking)} onCancel={() => setAsking(undefined)} />}
    </>
  );
}

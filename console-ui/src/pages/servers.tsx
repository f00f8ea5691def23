// Topics and servers: the RPC topics the console was pointed at, their live servers (discover():
// host, pid, in flight, ping), "expected N, see M" where configured, and the topics the broker
// lists (where it can) to look at one more.
import { useState } from 'preact/hooks';
import { get, type Servers, type Topics } from '../api.js';
import { usePoll } from '../poll.js';
import { ErrorNote, Note, Num, time, type PageProps } from '../widgets.js';

function TopicServers({ topic, refreshMs }: { topic: string; refreshMs: number }) {
  const { data, error } = usePoll(() => get<Servers>('servers', { topic }), refreshMs, [topic]);
  const seen = data?.servers.length ?? 0;
  const short = data?.expected !== null && data?.expected !== undefined && seen < data.expected;
  return (
    <section data-testid="topic-servers" data-topic={topic}>
      <h3>
        <code>{topic}</code>{' '}
        {data && data.expected !== null && (
          <span class={short ? 'badge warn' : 'badge ok'} data-testid="expected">
            expected {data.expected}, see {seen}
          </span>
        )}
      </h3>
      {error && <ErrorNote error={error} />}
      {data && (
        <table>
          <thead>
            <tr>
              <th>Server</th>
              <th>Host</th>
              <th>PID</th>
              <th class="num">In flight</th>
              <th class="num">Ping ms</th>
            </tr>
          </thead>
          <tbody>
            {data.servers.length === 0 && (
              <tr>
                <td colSpan={5} class="muted">
                  No server answered on this topic.
                </td>
              </tr>
            )}
            {data.servers.map((s) => (
              <tr key={s.server} data-testid="server-row">
                <td>{s.server}</td>
                <td>{s.host}</td>
                <td>{s.pid}</td>
                <td class="num">{s.inFlight}</td>
                <td class="num">
                  <Num value={s.pingMs === null ? null : Math.round(s.pingMs * 10) / 10} unknown="no answer" />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data && <p class="muted small">Checked at {time(data.at)}.</p>}
    </section>
  );
}

export function ServersPage({ overview, query }: PageProps) {
  const [extra, setExtra] = useState<string | undefined>(query.get('topic') ?? undefined);
  const topics = usePoll(() => get<Topics>('topics'), overview.refreshMs, []);
  const configured = topics.data?.configured ?? overview.topics;
  const listed = topics.data?.listed;
  const others = (listed ?? []).filter((t) => !configured.includes(t));
  const shown = extra && !configured.includes(extra) ? [...configured, extra] : configured;
  return (
    <>
      <h2>Topics &amp; servers</h2>
      {topics.error && <ErrorNote error={topics.error} />}
      {shown.length === 0 && <Note>No RPC topic configured: start the console with --topic (or the topics option), or pick one the broker lists below.</Note>}
      {shown.map((t) => (
        <TopicServers key={t} topic={t} refreshMs={overview.refreshMs} />
      ))}
      <h3>Topics on the broker</h3>
      {!overview.inspection.listsTopics || listed === null ? (
        <Note>The {overview.driver} driver cannot list the RPC topics on the broker: only the configured topics are shown.</Note>
      ) : listed === undefined ? (
        <p class="muted">Loading…</p>
      ) : others.length === 0 ? (
        <p class="muted">No other RPC topics.</p>
      ) : (
        <ul class="topics">
          {others.map((t) => (
            <li key={t}>
              <button type="button" class="link" onClick={() => setExtra(t)}>
                {t}
              </button>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

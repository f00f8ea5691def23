// Pools and lag: every notification pool of the console's notification topics with its consumers
// and backlog, and a chart of the backlog over the last minutes (one line per pool).
import { ApiError, get, type Inspection, type PoolSample, type PoolView } from '../api.js';
import { Chart } from '../chart.js';
import { usePoll } from '../poll.js';
import { ErrorNote, Note, Num, type PageProps } from '../widgets.js';

/** Lines of the chart from the history: x in seconds, one series per pool of an address, null where unknown. */
export function lagSeries(samples: readonly PoolSample[]): { x: number[]; series: { label: string; values: (number | null)[] }[] } {
  const times = [...new Set(samples.map((s) => s.at))].sort((a, b) => a - b);
  const index = new Map(times.map((t, i) => [t, i]));
  const lines = new Map<string, (number | null)[]>();
  for (const s of samples) {
    const label = s.pool === s.address ? `${s.pool} (default)` : `${s.pool} on ${s.address}`;
    let values = lines.get(label);
    if (!values) lines.set(label, (values = times.map(() => null)));
    values[index.get(s.at)!] = s.backlog ?? null;
  }
  const series = [...lines].map(([label, values]) => ({ label, values }));
  return { x: times.map((t) => t / 1000), series };
}

function cannot(inspection: Inspection, driver: string): string[] {
  const notes: string[] = [];
  if (!inspection.listsPools) notes.push(`The ${driver} driver cannot list the pools on the broker: the default pools and the pools named with --pool are shown.`);
  if (!inspection.consumers) notes.push(`The ${driver} driver cannot count a pool's consumers.`);
  if (!inspection.backlog) notes.push(`The ${driver} driver cannot tell a pool's backlog.`);
  return notes;
}

function TopicPools({ topic, overview }: { topic: string; overview: PageProps['overview'] }) {
  const pools = usePoll(() => get<{ pools: PoolView[] }>('pools', { topic }), overview.refreshMs, [topic]);
  const history = usePoll(() => get<{ samples: PoolSample[] }>('pools/history', { topic }), overview.refreshMs, [topic]);
  if (pools.error instanceof ApiError && pools.error.status === 501) {
    return <Note>The {overview.driver} driver cannot inspect notification pools.</Note>;
  }
  const lag = lagSeries(history.data?.samples ?? []);
  return (
    <section>
      <h3>
        <code>{topic}</code>
      </h3>
      {pools.error && <ErrorNote error={pools.error} />}
      {pools.data && (
        <table>
          <thead>
            <tr>
              <th>Address</th>
              <th>Pool</th>
              <th class="num">Consumers</th>
              <th class="num">Backlog</th>
              <th class="num">Unacked</th>
            </tr>
          </thead>
          <tbody>
            {pools.data.pools.length === 0 && (
              <tr>
                <td colSpan={5} class="muted">
                  No pool of this topic exists on the broker yet.
                </td>
              </tr>
            )}
            {pools.data.pools.map((p) => (
              <tr key={`${p.address} ${p.pool}`} data-testid="pool-row" data-address={p.address} data-pool={p.pool} data-backlog={p.backlog ?? ''}>
                <td>
                  {p.shared ? `${topic}.*` : p.address}
                  {p.shared && <span class="muted"> (one queue for every priority)</span>}
                </td>
                <td>
                  {p.pool}
                  {p.isDefault && <span class="muted"> (default)</span>}
                </td>
                <td class="num">
                  <Num value={p.consumers} />
                </td>
                <td class="num">
                  <Num value={p.backlog} />
                </td>
                <td class="num">
                  <Num value={p.unacked} unknown="—" />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h4>Backlog, last minutes</h4>
      {history.error && <ErrorNote error={history.error} />}
      <Chart testid="lag-chart" x={lag.x} series={lag.series} yLabel="messages waiting" />
    </section>
  );
}

export function PoolsPage({ overview }: PageProps) {
  return (
    <>
      <h2>Pools &amp; lag</h2>
      {cannot(overview.inspection, overview.driver).map((n) => (
        <Note key={n}>{n}</Note>
      ))}
      {overview.notificationTopics.length === 0 && <Note>No notification topic configured: start the console with --notification-topic.</Note>}
      {overview.notificationTopics.map((t) => (
        <TopicPools key={t} topic={t} overview={overview} />
      ))}
    </>
  );
}

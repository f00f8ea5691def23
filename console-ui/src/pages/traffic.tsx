// Traffic: calls, casts, notifications and errors per interval, and latency percentiles, from
// the metrics tidings keeps for this transport in this process.
import { get, type Traffic } from '../api.js';
import { Chart } from '../chart.js';
import { usePoll } from '../poll.js';
import { ErrorNote, Note, Num, time, type PageProps } from '../widgets.js';

const KINDS = ['calls', 'casts', 'notifications', 'errors'] as const;

export function TrafficPage({ overview }: PageProps) {
  const { data, error } = usePoll(() => get<Traffic>('traffic'), overview.refreshMs, []);
  const buckets = data?.buckets ?? [];
  const recent = buckets.slice(-10).reverse();
  return (
    <>
      <h2>Traffic</h2>
      <Note>
        Counts what this process sends and handles through this transport (the console's own pings excluded). A standalone <code>tidings console</code> only sees its own
        process: mount the console in a service with <code>startConsole(transport)</code> to see that service's traffic.
      </Note>
      {error && <ErrorNote error={error} />}
      {data && (
        <p class="muted small">
          Since {time(data.since)}, per {Math.round(data.bucketMs / 1000)} s.
        </p>
      )}
      <Chart
        testid="traffic-chart"
        x={buckets.map((b) => b.at / 1000)}
        series={KINDS.map((k) => ({ label: k, values: buckets.map((b) => b[k]) }))}
        yLabel="messages per interval"
      />
      <h3>Latest intervals (latency in ms)</h3>
      <table>
        <thead>
          <tr>
            <th>Interval</th>
            {KINDS.map((k) => (
              <th key={k} class="num">
                {k}
              </th>
            ))}
            <th class="num">p50</th>
            <th class="num">p90</th>
            <th class="num">p99</th>
          </tr>
        </thead>
        <tbody>
          {recent.length === 0 && (
            <tr>
              <td colSpan={8} class="muted">
                No traffic yet.
              </td>
            </tr>
          )}
          {recent.map((b) => (
            <tr key={b.at} data-testid="traffic-row">
              <td>{time(b.at)}</td>
              {KINDS.map((k) => (
                <td key={k} class="num">
                  {b[k]}
                </td>
              ))}
              {(['p50', 'p90', 'p99'] as const).map((p) => (
                <td key={p} class="num">
                  <Num value={b[p] === null ? null : Math.round(b[p] * 10) / 10} unknown="—" />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

// Health: transport.health() as the API serves it (connected, blocked, reconnecting, the last
// connection error with its URLs redacted).
import { get, type Health } from '../api.js';
import { usePoll } from '../poll.js';
import { ErrorNote, time, type PageProps } from '../widgets.js';

function YesNo({ value, good }: { value: boolean; good: boolean }) {
  return <span class={value === good ? 'badge ok' : 'badge warn'}>{value ? 'yes' : 'no'}</span>;
}

export function HealthPage({ overview }: PageProps) {
  const { data, error } = usePoll(() => get<Health>('health'), overview.refreshMs, []);
  return (
    <>
      <h2>Health</h2>
      {error && <ErrorNote error={error} />}
      {data && (
        <table class="narrow">
          <tbody>
            <tr>
              <th>Connected</th>
              <td data-testid="health-connected" data-value={String(data.connected)}>
                <YesNo value={data.connected} good={true} />
              </td>
            </tr>
            <tr>
              <th>Blocked by the broker</th>
              <td>
                <YesNo value={data.blocked} good={false} />
              </td>
            </tr>
            <tr>
              <th>Reconnecting</th>
              <td>
                <YesNo value={data.reconnecting} good={false} />
              </td>
            </tr>
            <tr>
              <th>Last connection error</th>
              <td>{data.lastError ? `${data.lastError.message} (${time(data.lastError.at)})` : <span class="muted">none</span>}</td>
            </tr>
          </tbody>
        </table>
      )}
    </>
  );
}

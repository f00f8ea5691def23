// The tidings console: a header with the transport (redacted URL) and five pages under hash
// routes (#/servers, #/pools, #/dead-letters, #/traffic, #/health). Every page reloads its data
// every overview.refreshMs; nothing is loaded from outside the console's own origin.
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get, type Overview } from './api.js';
import { DeadLettersPage } from './pages/dead-letters.js';
import { HealthPage } from './pages/health.js';
import { PoolsPage } from './pages/pools.js';
import { ServersPage } from './pages/servers.js';
import { TrafficPage } from './pages/traffic.js';
import { ErrorNote } from './widgets.js';

const PAGES = [
  { id: 'servers', title: 'Topics & servers', Page: ServersPage },
  { id: 'pools', title: 'Pools & lag', Page: PoolsPage },
  { id: 'dead-letters', title: 'Dead letters', Page: DeadLettersPage },
  { id: 'traffic', title: 'Traffic', Page: TrafficPage },
  { id: 'health', title: 'Health', Page: HealthPage },
] as const;

/** The route: `#/<page>?<query>`; an unknown page is the servers page. */
function route(): { page: (typeof PAGES)[number]; query: URLSearchParams } {
  const [path, qs = ''] = location.hash.replace(/^#\/?/, '').split('?');
  return { page: PAGES.find((p) => p.id === path) ?? PAGES[0], query: new URLSearchParams(qs) };
}

function App() {
  const [where, setWhere] = useState(route);
  const [overview, setOverview] = useState<Overview | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);

  useEffect(() => {
    const onHash = () => setWhere(route());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    get<Overview>('overview').then(setOverview, (err: Error) => setError(err));
  }, []);

  const { page, query } = where;
  return (
    <>
      <header>
        <h1>tidings console</h1>
        {overview && (
          <p class="transport">
            <span class="driver">{overview.driver}</span> <code>{overview.url}</code> · v{overview.version} ·{' '}
            {overview.writable ? <span class="badge write">write actions enabled</span> : <span class="badge">read-only</span>}
          </p>
        )}
        <nav>
          {PAGES.map((p) => (
            <a key={p.id} href={`#/${p.id}`} data-testid={`nav-${p.id}`} class={p.id === page.id ? 'active' : ''}>
              {p.title}
            </a>
          ))}
        </nav>
      </header>
      <main>
        {error && <ErrorNote error={error} />}
        {overview ? <page.Page overview={overview} query={query} /> : !error && <p class="muted">Loading…</p>}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);

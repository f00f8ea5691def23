// `npm run bench:scale:plot`: draws bench/results/scale-*.json (written by `npm run bench:scale`)
// as SVG line charts, by hand: scale-topics.svg (every driver's cost per topic count) and
// scale-soak-<driver>.svg (memory through each long run).
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { RESULTS_DIR, type ScaleResults } from './scale.js';
import type { SoakResult, TopicsRow } from './scale-runs.js';

const COLORS: Readonly<Record<string, string>> = { memory: '#1f77b4', rabbit: '#ff7f0e', redis: '#d62728', kafka: '#2ca02c', rss: '#1f77b4', heap: '#d62728' };
const FONT = 'font-family="sans-serif" font-size="11"';

export interface Series {
  name: string;
  points: ReadonlyArray<readonly [number, number]>;
}

export interface Panel {
  title: string;
  xLabel: string;
  yLabel: string;
  /** A log10 x axis (topic counts 1..1000). */
  xLog?: boolean;
  /** A log10 y axis: points at or below zero are left out (on log-log axes, linear cost is a slope of 1). */
  yLog?: boolean;
  series: readonly Series[];
  /** A vertical marker (the end of a soak's warm-up) at this x. */
  marker?: { x: number; label: string };
}

const W = 360;
const H = 240;
const M = { left: 58, right: 22, top: 36, bottom: 40 };

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const num = (n: number) => (Math.abs(n) >= 1000 ? n.toLocaleString('en-US', { maximumFractionDigits: 0 }) : String(Number(n.toPrecision(3))));

/** Round tick values covering [lo, hi]. */
function ticks(lo: number, hi: number, count = 5): number[] {
  if (hi <= lo) hi = lo + 1;
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((f) => f * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  const end = Math.ceil(hi / step - 1e-9) * step;
  for (let v = Math.floor(lo / step) * step; v <= end + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Decades covering [lo, hi] in log10 units, with 2 and 5 between them when there are few. */
function logTicks(lo: number, hi: number): number[] {
  let a = Math.floor(lo);
  let b = Math.ceil(hi);
  if (b <= a) b = a + 1;
  if (b - a > 8) a = b - 8;
  const out: number[] = [];
  for (let d = a; d <= b; d++) {
    out.push(d);
    if (b - a <= 2 && d < b) out.push(d + Math.log10(2), d + Math.log10(5));
  }
  return out;
}

/** One chart, its top-left corner at (x0, y0). */
export function panelSvg(p: Panel, x0: number, y0: number): string {
  const series = p.yLog ? p.series.map((s) => ({ ...s, points: s.points.filter(([, y]) => y > 0) })) : p.series;
  const all = series.flatMap((s) => s.points);
  const fx = (x: number) => (p.xLog ? Math.log10(Math.max(x, 1e-9)) : x);
  const fy = (y: number) => (p.yLog ? Math.log10(y) : y);
  const xs = all.map(([x]) => fx(x));
  const ys = all.map(([, y]) => fy(y));
  const xTicks = p.xLog ? Array.from({ length: Math.ceil(Math.max(...xs, 0)) + 1 }, (_, i) => i) : ticks(Math.min(...xs, 0), Math.max(...xs, 1));
  const yTicks = p.yLog ? logTicks(Math.min(...ys, 0), Math.max(...ys, 0)) : ticks(Math.min(0, ...ys), Math.max(...ys, 1e-9));
  const [xLo, xHi] = [xTicks[0], xTicks[xTicks.length - 1] === xTicks[0] ? xTicks[0] + 1 : xTicks[xTicks.length - 1]];
  const [yLo, yHi] = [yTicks[0], yTicks[yTicks.length - 1]];
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const sx = (x: number) => x0 + M.left + ((fx(x) - xLo) / (xHi - xLo)) * pw;
  const sxRaw = (v: number) => x0 + M.left + ((v - xLo) / (xHi - xLo)) * pw;
  const syRaw = (v: number) => y0 + M.top + ph - ((v - yLo) / (yHi - yLo || 1)) * ph;
  const sy = (y: number) => syRaw(fy(y));
  const out: string[] = [];
  out.push(`<text x="${x0 + W / 2}" y="${y0 + 14}" text-anchor="middle" ${FONT} font-weight="bold">${esc(p.title)}${p.yLog ? ' (log scale)' : ''}</text>`);
  out.push(`<rect x="${x0 + M.left}" y="${y0 + M.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  for (const t of yTicks) {
    const y = syRaw(t);
    out.push(`<line x1="${x0 + M.left}" x2="${x0 + M.left + pw}" y1="${y}" y2="${y}" stroke="#eee"/>`);
    out.push(`<text x="${x0 + M.left - 4}" y="${y + 4}" text-anchor="end" ${FONT}>${num(p.yLog ? 10 ** t : t)}</text>`);
  }
  for (const t of xTicks) {
    const x = sxRaw(t);
    out.push(`<line x1="${x}" x2="${x}" y1="${y0 + M.top}" y2="${y0 + M.top + ph}" stroke="#eee"/>`);
    out.push(`<text x="${x}" y="${y0 + M.top + ph + 14}" text-anchor="middle" ${FONT}>${num(p.xLog ? 10 ** t : t)}</text>`);
  }
  out.push(`<text x="${x0 + M.left + pw / 2}" y="${y0 + H - 6}" text-anchor="middle" ${FONT}>${esc(p.xLabel)}</text>`);
  out.push(`<text transform="translate(${x0 + 12},${y0 + M.top + ph / 2}) rotate(-90)" text-anchor="middle" ${FONT}>${esc(p.yLabel)}</text>`);
  if (p.marker) {
    const x = sx(p.marker.x);
    out.push(`<line x1="${x}" x2="${x}" y1="${y0 + M.top}" y2="${y0 + M.top + ph}" stroke="#888" stroke-dasharray="4 3"/>`);
    out.push(`<text x="${x + 3}" y="${y0 + M.top + 11}" ${FONT} fill="#666">${esc(p.marker.label)}</text>`);
  }
  // The legend: one line of names above the plot area.
  let lx = x0 + M.left;
  series.forEach((s, i) => {
    const color = COLORS[s.name] ?? ['#9467bd', '#8c564b', '#e377c2', '#7f7f7f'][i % 4];
    if (s.points.length > 0) {
      const d = s.points.map(([x, y], j) => `${j === 0 ? 'M' : 'L'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ');
      out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.8"/>`);
      if (s.points.length <= 12) for (const [x, y] of s.points) out.push(`<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="2.5" fill="${color}"/>`);
    }
    out.push(`<rect x="${lx}" y="${y0 + M.top - 12}" width="10" height="3" fill="${color}"/>`);
    out.push(`<text x="${lx + 13}" y="${y0 + M.top - 7}" ${FONT} fill="${color}">${esc(s.name)}</text>`);
    lx += 22 + s.name.length * 6.5;
  });
  return out.join('\n');
}

/** Panels in a grid of `columns`, under a title. */
export function chartSvg(title: string, panels: readonly Panel[], columns = 3): string {
  const rows = Math.ceil(panels.length / columns);
  const width = W * Math.min(columns, panels.length);
  const height = 30 + rows * H;
  const body = panels.map((p, i) => panelSvg(p, (i % columns) * W, 30 + Math.floor(i / columns) * H));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="19" text-anchor="middle" font-family="sans-serif" font-size="14" font-weight="bold">${esc(title)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

function topicsPanels(results: readonly ScaleResults[]): Panel[] {
  const withTopics = results.filter((r) => r.topics && r.topics.rows.length > 0);
  const series = (pick: (row: TopicsRow) => number | undefined): Series[] =>
    withTopics.map((r) => ({ name: r.driver, points: r.topics!.rows.flatMap((row) => (pick(row) === undefined ? [] : [[row.topics, pick(row)!] as const])) })).filter((s) => s.points.length > 0);
  const x = { xLabel: 'topics (each a server and a pooled listener)', xLog: true, yLog: true };
  return [
    { title: 'Start-up, servers + listeners', yLabel: 'ms', ...x, series: series((r) => r.serversStartMs + r.listenersStartMs) },
    { title: 'Start-up per server + listener', yLabel: 'ms', ...x, series: series((r) => (r.serversStartMs + r.listenersStartMs) / r.topics) },
    { title: 'JS heap per server + listener', yLabel: 'KB', ...x, series: series((r) => r.heapKbPerServer + r.heapKbPerListener) },
    { title: 'RSS per server + listener', yLabel: 'KB', ...x, series: series((r) => r.rssKbPerServer + r.rssKbPerListener) },
    { title: 'Idle CPU', yLabel: '% of one core', ...x, series: series((r) => r.idleCpuPct) },
    { title: 'Idle socket writes', yLabel: 'writes/s', ...x, series: series((r) => r.idleWritesPerSec) },
    { title: 'Calls with every topic alive', yLabel: 'calls/s', ...x, series: series((r) => r.callsPerSec) },
    { title: 'Broker objects per server + listener', yLabel: 'objects', ...x, series: series((r) => Object.values(r.brokerPerPair).reduce((a, b) => a + b, 0)) },
    { title: 'Stop, servers + listeners', yLabel: 'ms', ...x, series: series((r) => r.stopMs) },
  ];
}

function soakPanels(soak: SoakResult): Panel[] {
  const warm = soak.samples[soak.warmIndex]?.done ?? 0;
  const x = { xLabel: `${soak.kind} done`, marker: { x: warm, label: 'warm-up end' } };
  const points = (pick: (s: SoakResult['samples'][number]) => number) => soak.samples.map((s) => [s.done, pick(s)] as const);
  return [
    { title: `${soak.kind}: RSS and heap`, yLabel: 'MB', ...x, series: [{ name: 'rss', points: points((s) => s.rssMb) }, { name: 'heap', points: points((s) => s.heapMb) }] },
    { title: `${soak.kind}: timers, handles, pending replies`, yLabel: 'count', ...x, series: [{ name: 'timers', points: points((s) => s.timers) }, { name: 'handles', points: points((s) => s.handles) }, { name: 'pending replies', points: points((s) => s.pendingReplies) }] },
  ];
}

/** Reads every results file and writes the SVGs; returns the files written. */
export function plot(dir = RESULTS_DIR): string[] {
  const results = readdirSync(dir)
    .filter((f) => /^scale-[a-z]+\.json$/.test(f))
    .sort()
    .map((f) => JSON.parse(readFileSync(`${dir}${f}`, 'utf8')) as ScaleResults);
  const written: string[] = [];
  const write = (name: string, svg: string) => {
    writeFileSync(`${dir}${name}`, svg);
    written.push(`${dir}${name}`);
  };
  if (results.some((r) => r.topics)) write('scale-topics.svg', chartSvg('tidings: cost as topics grow (bench:scale --mode topics)', topicsPanels(results)));
  for (const r of results) {
    if (!r.soak || r.soak.runs.length === 0) continue;
    write(`scale-soak-${r.driver}.svg`, chartSvg(`tidings on ${r.driver}: a long run (bench:scale --mode soak)`, r.soak.runs.flatMap(soakPanels), 2));
  }
  return written;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const file of plot()) console.log(`written ${file}`);
}

// A uPlot time-series chart: x is epoch seconds, one line per named series. uPlot draws on a
// canvas; this component only creates it, feeds it data and fits it to its container's width.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

/** Steps of the time axis, in seconds. */
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600];
const clock = (seconds: number) => new Date(seconds * 1000).toLocaleTimeString(undefined, { hour12: false });

const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];

export interface ChartProps {
  /**
   * The data-testid of the container. Tests read from it data-points (the number of x values)
   * and data-latest (JSON: each series' label and its last value).
   */
  readonly testid: string;
  /** Epoch seconds, ascending. */
  readonly x: readonly number[];
  /** One line per series; null where the value is unknown. */
  readonly series: readonly { readonly label: string; readonly values: readonly (number | null)[] }[];
  /** What the y axis counts, e.g. "messages". */
  readonly yLabel: string;
  readonly height?: number;
}

export function Chart({ testid, x, series, yLabel, height = 220 }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label).join('\u0000');
  const data = [x as number[], ...series.map((s) => s.values as (number | null)[])] as uPlot.AlignedData;

  // A new chart when the series change (uPlot's series are fixed at creation).
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const options: uPlot.Options = {
      width: Math.max(el.clientWidth, 300),
      height,
      series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLOURS[i % COLOURS.length], width: 2, spanGaps: false }))],
      // Whole seconds at least, shown as local HH:MM:SS (the charts span seconds to minutes).
      axes: [{ incrs: TIME_STEPS, values: (_u, splits) => splits.map(clock) }, { label: yLabel }],
      scales: { y: { range: (_u, min, max) => [0, Math.max(max ?? 0, min ?? 0, 1)] } },
      legend: { show: true, live: false },
    };
    const chart = new uPlot(options, data, el);
    plot.current = chart;
    const fit = () => chart.setSize({ width: Math.max(el.clientWidth, 300), height });
    window.addEventListener('resize', fit);
    return () => {
      window.removeEventListener('resize', fit);
      chart.destroy();
      plot.current = null;
    };
  }, [shape, yLabel, height]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  const latest = Object.fromEntries(series.map((s) => [s.label, s.values.length > 0 ? s.values[s.values.length - 1] : null]));
  return <div class="chart" ref={box} data-testid={testid} data-points={x.length} data-latest={JSON.stringify(latest)} />;
}

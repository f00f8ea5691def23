// docs/drivers.md against the drivers' options code: every option has a row, with the driver's
// default and its oslo query name, and every row names a real option, so the tables cannot rot.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULTS, QUERY_NAMES, resolveOptions } from '../../src/drivers/amqp/options.js';
import { MEMORY_DEFAULTS } from '../../src/drivers/memory/options.js';
import { DEFAULTS as KAFKA_DEFAULTS, QUERY_NAMES as KAFKA_QUERY_NAMES, resolveOptions as resolveKafkaOptions } from '../../src/drivers/kafka/options.js';
import * as redisOptions from '../../src/drivers/redis/options.js';
import { TransportURL } from '../../src/core/transport-url.js';
import { ROOT } from '../support/markdown.js';

interface Row {
  name: string;
  query: string;
  default: unknown;
}

const doc = readFileSync(join(ROOT, 'docs', 'drivers.md'), 'utf8');

/** The table rows of the section whose heading starts with `heading`. */
function rowsOf(heading: string): Row[] {
  const start = doc.indexOf(`\n${heading}`);
  if (start < 0) throw new Error(`docs/drivers.md has no section ${heading}`);
  const end = doc.indexOf('\n## ', start + 1);
  return doc
    .slice(start, end < 0 ? undefined : end)
    .split('\n')
    // Rows start with a `name` cell; the header row's third cell is `Default`.
    .filter((line) => /^\| `\w+` \|/.test(line) && !/\| Default \|/.test(line))
    .map((line) => {
      const [name, query, value] = line.split('|').slice(1, 4).map((c) => c.trim());
      return { name: name.slice(1, -1), query, default: parseDefault(value) };
    });
}

function parseDefault(cell: string): unknown {
  if (cell === '—') return undefined;
  const text = cell.replace(/^`|`$/g, '');
  if (/^'.*'$/.test(text)) return text.slice(1, -1);
  return JSON.parse(text);
}

describe('docs/drivers.md', () => {
  it('documents every memory:// option with its default', () => {
    const rows = rowsOf('## `memory://`');
    expect(Object.fromEntries(rows.map((r) => [r.name, r.default]))).toEqual({ ...MEMORY_DEFAULTS });
  });

  it('documents every RabbitMQ option with its default and oslo query name', () => {
    const rows = rowsOf('## `rabbit://`');
    const byName = new Map(rows.map((r) => [r.name, r]));
    for (const [name, value] of Object.entries(DEFAULTS)) expect(byName.get(name)?.default, name).toEqual(value);
    for (const [name, query] of Object.entries(QUERY_NAMES)) expect(byName.get(name)?.query, name).toContain(`\`${query}\``);
    const url = TransportURL.parse('rabbit://127.0.0.1/');
    // resolveOptions refuses an unknown name before looking at the value.
    for (const row of rows) expect(() => resolveOptions(url, { [row.name]: undefined }), row.name).not.toThrow();
    expect(() => resolveOptions(url, { notAnOption: undefined })).toThrow(/driverOptions\.notAnOption/);
  });

  it('documents every Kafka option with its default and query name', () => {
    const rows = rowsOf('## `kafka://`');
    const byName = new Map(rows.map((r) => [r.name, r]));
    for (const [name, value] of Object.entries(KAFKA_DEFAULTS)) expect(byName.get(name)?.default, name).toEqual(value);
    for (const [name, query] of Object.entries(KAFKA_QUERY_NAMES)) expect(byName.get(name)?.query, name).toContain(`\`${query}\``);
    const url = TransportURL.parse('kafka://127.0.0.1:9092/');
    for (const row of rows) expect(() => resolveKafkaOptions(url, { [row.name]: undefined }), row.name).not.toThrow();
  });

  it('documents every Redis option with its default and query name', () => {
    const rows = rowsOf('## `redis://`');
    const byName = new Map(rows.map((r) => [r.name, r]));
    for (const [name, value] of Object.entries(redisOptions.DEFAULTS)) expect(byName.get(name)?.default, name).toEqual(value);
    for (const [name, query] of Object.entries(redisOptions.QUERY_NAMES)) expect(byName.get(name)?.query, name).toContain(`\`${query}\``);
    expect(rows.map((r) => r.name).sort()).toEqual(Object.keys(redisOptions.QUERY_NAMES).sort());
    const url = TransportURL.parse('redis://127.0.0.1/');
    for (const row of rows) expect(() => redisOptions.resolveOptions(url, { [row.name]: undefined }), row.name).not.toThrow();
    expect(() => redisOptions.resolveOptions(url, { notAnOption: undefined })).toThrow(/driverOptions\.notAnOption/);
  });
});

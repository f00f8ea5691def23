// expose and expectedExceptions also work as standard (stage 3) method decorators. The test
// runner's transform does not lower decorators, so the fixture is compiled with tsc here.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { ExplicitRpcAccessPolicy, lookupEndpointMethod } from '../../../src/rpc/access-policy.js';
import { RpcDispatcher } from '../../../src/rpc/dispatcher.js';
import { FakeRpcIncoming, request } from './fake-incoming.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tidings-decorators-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function loadFixture(): Promise<{ Inventory: new () => object }> {
  const source = readFileSync(join(here, 'fixtures/decorated-inventory.ts'), 'utf8');
  const { outputText } = ts.transpileModule(source, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } });
  // Point the fixture's relative imports at the real sources.
  const code = outputText.replace(/'\.\.\/\.\.\/\.\.\/\.\.\/src\/([^']+)\.js'/g, (_m, p: string) => `'${pathToFileURL(join(here, '../../../src', p + '.ts')).href}'`);
  const file = join(dir, 'decorated-inventory.mjs');
  writeFileSync(file, code);
  return import(/* @vite-ignore */ file);
}

describe('method decorators', () => {
  it('@expose marks methods for ExplicitRpcAccessPolicy; @expectedExceptions marks expected errors', async () => {
    const { Inventory } = await loadFixture();
    const inv = new Inventory();
    const policy = new ExplicitRpcAccessPolicy();
    expect(policy.isAllowed(inv, 'stock', lookupEndpointMethod(inv, 'stock')!)).toBe(true);
    expect(policy.isAllowed(inv, 'hidden', lookupEndpointMethod(inv, 'hidden')!)).toBe(false);
    const d = new RpcDispatcher([inv], { accessPolicy: policy });
    expect(await d.dispatch(new FakeRpcIncoming({}, request('stock')))).toEqual({ ok: true, result: 2 });
    expect(await d.dispatch(new FakeRpcIncoming({}, request('reserve')))).toMatchObject({ ok: false, expected: true });
    expect(await d.dispatch(new FakeRpcIncoming({}, request('hidden')))).toMatchObject({ ok: false, expected: false });
  });
});

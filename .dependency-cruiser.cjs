// The floors of src/ (docs/design.md "Layers"), checked by dependency-cruiser from `npm run lint`:
// an import may only point down a floor or stay inside its folder, and no module may reach
// itself again through its imports (static, dynamic or type-only). From the ground up:
//   core, structures, contract, drivers/* and middleware, observability, transport.ts,
//   server, rpc and notify, index.ts, then testing, nestjs and console (side by side), and cli
//   at the top (it mounts the console).
// Only src/nestjs (tidings/nestjs) imports NestJS and rxjs: the core never loads them.
// ESLint's no-restricted-imports (eslint.config.js) says the same per file, as you type.

/** Paths of each floor, as regular expressions on the path from the repository root. */
const F = {
  core: '^src/core/',
  structures: '^src/structures/',
  contract: '^src/contract/',
  drivers: '^src/drivers/',
  middleware: '^src/middleware/',
  observability: '^src/observability/',
  transport: '^src/transport\\.ts$',
  server: '^src/server/',
  facades: '^src/(rpc|notify)/',
  index: '^src/index\\.ts$',
  testing: '^src/testing/',
  nestjs: '^src/nestjs/',
  console: '^src/console/',
  cli: '^src/cli/',
};
const ORDER = ['core', 'structures', 'contract', 'drivers', 'middleware', 'observability', 'transport', 'server', 'facades', 'index', 'testing', 'nestjs', 'console', 'cli'];
// Floors that share one storey and must not import each other.
const SAME_STOREY = { drivers: ['middleware'], middleware: ['drivers'], testing: ['nestjs', 'console'], nestjs: ['testing', 'console'], console: ['testing', 'nestjs'], cli: ['testing', 'nestjs'] };

/** One rule per floor: nothing above it (and nothing beside it on its storey). */
const upward = ORDER.map((name, i) => {
  const above = ORDER.slice(i + 1).filter((other) => !(name === 'transport' && other === 'drivers'));
  const forbidden = [...new Set([...above, ...(SAME_STOREY[name] ?? [])])];
  return {
    name: `no-import-up-from-${name}`,
    comment: `src/${name} may import only the floors below it (docs/design.md, "Layers")`,
    severity: 'error',
    from: { path: F[name] },
    to: { path: forbidden.map((f) => F[f]) },
  };
}).filter((rule) => rule.to.path.length > 0);

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No module may import itself again through a chain of imports.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      // Only transport.ts knows drivers, and only through import(), so a process loads just its broker's.
      name: 'drivers-only-lazily',
      severity: 'error',
      from: { path: F.transport },
      to: { path: F.drivers, dependencyTypesNot: ['dynamic-import'] },
    },
    {
      name: 'no-driver-imports-another',
      severity: 'error',
      from: { path: '^src/drivers/([^/]+)/' },
      to: { path: '^src/drivers/', pathNot: '^src/drivers/$1/' },
    },
    {
      name: 'rpc-and-notify-apart',
      comment: 'The two façades share the server lifecycle below them, never each other.',
      severity: 'error',
      from: { path: '^src/rpc/' },
      to: { path: '^src/notify/' },
    },
    {
      name: 'notify-and-rpc-apart',
      severity: 'error',
      from: { path: '^src/notify/' },
      to: { path: '^src/rpc/' },
    },
    {
      name: 'nestjs-only-in-tidings-nestjs',
      comment: 'NestJS (and rxjs) are optional peers for tidings/nestjs users: nothing else in src/ may import them.',
      severity: 'error',
      from: { path: '^src/', pathNot: F.nestjs },
      to: { path: '(^|/)node_modules/(@nestjs/|rxjs/|reflect-metadata/)' },
    },
    {
      name: 'nestjs-through-the-public-surface',
      comment: 'tidings/nestjs is built on the public API (src/index.ts), as a user would build it.',
      severity: 'error',
      from: { path: F.nestjs },
      to: { path: '^src/', pathNot: [F.nestjs, F.index] },
    },
    {
      name: 'testing-knows-only-memory',
      comment: 'tidings/testing drives the public API; of the drivers it knows only memory:// (its test hooks).',
      severity: 'error',
      from: { path: F.testing },
      to: { path: '^src/drivers/', pathNot: '^src/drivers/memory/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // node_modules is not excluded (only not followed): nestjs-only-in-tidings-nestjs must see imports of packages.
    exclude: { path: '^(dist|\\.tmp)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};

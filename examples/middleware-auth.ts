// Middleware: a client interceptor puts a token into the request context, a server interceptor
// checks it and refuses with a typed error, and a second client interceptor sets per-method
// timeouts. Run: npx tsx examples/middleware-auth.ts
import { randomUUID } from 'node:crypto';
import {
  Target,
  defaultRemoteErrorRegistry,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  type Context,
  type RpcClientMiddleware,
  type RpcServerMiddleware,
} from 'tidings';

/** The refusal; `remoteModule` lets callers that allow it get the class back. */
class Unauthorized extends Error {
  static readonly remoteModule = 'auth.errors';
  override readonly name = 'Unauthorized';
}

const TOKENS = new Map([['s3cr3t', 'alice']]);

/** Server side: the token must be known; the endpoint sees `ctx.user` instead of the token. */
const checkToken: RpcServerMiddleware = {
  before(inv) {
    const { auth_token: token, ...rest } = inv.ctx as Context;
    const user = typeof token === 'string' ? TOKENS.get(token) : undefined;
    if (!user) throw new Unauthorized(`${inv.method}: missing or unknown auth_token`);
    inv.ctx = { ...rest, user };
  },
};

/** Client side: every request carries the caller's token (a copy of the context, never the caller's object). */
const sendToken = (token: string): RpcClientMiddleware => ({
  before(inv) {
    inv.ctx = { ...(inv.ctx as Context), auth_token: token };
  },
});

/** Client side: per-method reply deadlines. */
const timeouts: RpcClientMiddleware = {
  before(inv) {
    if (inv.kind === 'call' && inv.method === 'report') inv.timeout = 30_000;
  },
};

class Accounts {
  whoami(ctx: Context): string {
    return String(ctx.user);
  }
}

const transport = await getRpcTransport(undefined, {
  allowedRemoteExmods: ['auth.errors'],
  remoteErrors: defaultRemoteErrorRegistry.clone().register('auth.errors', Unauthorized),
});
const topic = `accounts-${randomUUID().slice(0, 8)}`;
const server = getRpcServer(transport, new Target({ topic, server: 'accounts-1' }), [new Accounts()], { middleware: [checkToken] });
await server.start();

const alice = getRpcClient<Accounts>(transport, { topic }, { timeout: 5000, middleware: [sendToken('s3cr3t'), timeouts] });
console.log('whoami with a token:', await alice.call({}, 'whoami'));

const anonymous = getRpcClient<Accounts>(transport, { topic }, { timeout: 5000 });
try {
  await anonymous.call({}, 'whoami');
} catch (err) {
  console.log(`whoami without a token -> ${(err as Error).name}: ${(err as Error).message}`);
  console.log('refusal is an Unauthorized:', err instanceof Unauthorized);
}

await server.stop();
await server.wait();
await transport.cleanup();
console.log('middleware-auth done');

// How close tidings' RPC on RabbitMQ can come to raw-oslo at all (issue 30 asks for 0.95): raw-oslo's
// call loop (raw-amqp-oslo.ts: amqplib, oslo's protocol, confirms both ways, both JSON layers)
// with tidings' per-call contract added one piece at a time, then tidings itself, in interleaved
// rounds on one broker. Each rung does what the one before did and:
//
// 1. raw-oslo: writes and reads both layers by hand, checks nothing (the bench's raw-oslo column).
// 2. + wire checks: tidings' codec. The client encodes the request as tidings does
//    (`encodeRpcRequest`: context flattened, a fresh `_unique_id`); the server decodes and checks it
//    (`decodeBody`, `parseRpcRequest`: an object, the envelope's version, `method`, `args`, string
//    wire keys, no context key that reaches a prototype) and encodes the reply (`encodeReply`:
//    a JSON-safe result, under `max_message_bytes`); the client decodes the reply (`decodeBody`).
// 3. + duplicate window and reply address: the server drops a `_unique_id` it has seen (tidings'
//    window of 4,096 ids) and replies only to an address of reply-queue shape (`isReplyAddress`).
// 4. + call registry: the client waits through tidings' PendingReplies (a deadline timer per call,
//    oslo's reply rules, failures rebuilt as typed errors) instead of a bare map of resolvers.
// 5. + dispatch: the server finds the endpoint method by name and version, runs it in a `try`,
//    awaits its outcome, then replies (a handler that throws or returns a promise is served).
//
// The top rung is the floor of any RPC that keeps tidings' promises on oslo's wire with amqplib;
// tidings / rung 5 is what tidings' own machinery (listener, executor, server lifecycle, driver
// layers, the client's options and middleware seams) costs beyond it.
// `npx tsx bench/amqp-contract-cost.ts [--url rabbit://guest:guest@127.0.0.1:5672/] [--scenario
// call-sequential|call-concurrent] [--count 5000] [--warmup 5000] [--rounds 9] [--rungs 1,5,6] [--instructions]`;
// `--rungs` runs only the rungs named (raw-oslo should be one: ratios are taken against the first).
// `--instructions` counts each rung's instructions per call under callgrind instead of timing it
// (ladder.ts: a process per rung and round, V8 on one thread). See bench/README.md.
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { isReplyAddress } from '../src/contract/addressing.js';
import { decodeBody } from '../src/contract/envelope.js';
import type { RpcReply } from '../src/contract/incoming-message.js';
import { PendingReplies } from '../src/contract/pending-replies.js';
import { RemoteErrorRegistry } from '../src/contract/remote-error.js';
import type { DriverMessage } from '../src/contract/types.js';
import { DEFAULT_MAX_MESSAGE_BYTES, encodeReply, encodeRpcRequest, parseRpcRequest, type ParsedRpcRequest } from '../src/contract/wire.js';
import { silentLogger } from '../src/core/logger.js';
import { versionIsCompatible } from '../src/core/target.js';
import { TransportURL } from '../src/index.js';
import { DuplicateMessageChecker } from '../src/structures/dedup.js';
import { contextFor, type ScenarioFn } from './harness.js';
import { countLadder, ladderCounts, printLadder, runLadder, runRung } from './ladder.js';
import { PAYLOAD_TEXT, measureConcurrentCalls, measureSequentialCalls } from './measure.js';
import { CALL_TIMEOUT_MS, OSLO_RPC, withOsloRpc, type OsloRpcShape } from './raw-amqp-oslo.js';
import { SCENARIOS } from './scenarios.js';

const SCENARIO_NAMES = ['call-sequential', 'call-concurrent'] as const;
type ScenarioName = (typeof SCENARIO_NAMES)[number];

/** The server's answer to a checked request: the reply body, or undefined when none is due. */
type Serve = (request: ParsedRpcRequest) => Buffer | undefined | Promise<Buffer | undefined>;

/** oslo's rule for a reply: `failure` when it is truthy, else `result`. */
function resultOf(reply: DriverMessage): unknown {
  return reply.failure ? new Error(String(reply.failure)) : (reply.result ?? null);
}

/** A reply to `request`, encoded as tidings' servers encode one. */
const replyTo = (request: ParsedRpcRequest, reply: RpcReply) => Buffer.from(encodeReply(request.msgId!, reply, silentLogger, DEFAULT_MAX_MESSAGE_BYTES));

/** Rungs 2 and up: tidings' codec both ways, `serve` deciding the server's reply. */
function checked(serve: Serve, waitFor?: OsloRpcShape['waitFor'], answer: OsloRpcShape['answer'] = (content) => {
  const reply = decodeBody(content);
  return { msgId: reply._msg_id, result: resultOf(reply) };
}): OsloRpcShape {
  return {
    request: (i, call) =>
      Buffer.from(
        call === undefined
          ? encodeRpcRequest({ method: 'sink', args: { i, text: PAYLOAD_TEXT } }, {}, undefined, DEFAULT_MAX_MESSAGE_BYTES)
          : encodeRpcRequest({ method: 'echo', args: { i, text: PAYLOAD_TEXT } }, {}, call, DEFAULT_MAX_MESSAGE_BYTES),
      ),
    serve(content, reply) {
      let request: ParsedRpcRequest;
      try {
        request = parseRpcRequest(decodeBody(content));
      } catch {
        return undefined; // malformed: tidings rejects it and goes on
      }
      const send = (body: Buffer | undefined) => {
        if (body !== undefined) reply(request.replyQueue!, body);
      };
      const body = serve(request);
      return body instanceof Promise ? body.then(send) : send(body);
    },
    answer,
    waitFor,
  };
}

/** The rungs, from raw-oslo's up (see the file comment); each call makes fresh windows and registries. */
export function rungs(): Array<[string, OsloRpcShape]> {
  const echo: Serve = (request) => (request.msgId === undefined ? undefined : replyTo(request, { result: request.request.args }));

  /** Rung 3's checks before `serve`: a copy, or a call whose reply would go where no reply queue is, is dropped. */
  const windowed = () => {
    const w = new DuplicateMessageChecker(4096);
    return (serve: Serve): Serve => (request) => {
      if (request.uniqueId !== undefined && w.checkAndAdd(request.uniqueId)) return undefined;
      if (request.msgId !== undefined && request.replyQueue !== undefined && !isReplyAddress(request.replyQueue)) return undefined;
      return serve(request);
    };
  };

  /** Rung 4's client: every call through tidings' registry, its deadline timer and reply rules. */
  const registered = (): Pick<OsloRpcShape, 'waitFor' | 'answer'> => {
    const registry = new PendingReplies([], new RemoteErrorRegistry(), silentLogger);
    const options = { topic: 'bench', timeout: CALL_TIMEOUT_MS };
    return {
      waitFor(msgId, resolve) {
        registry.register(msgId, options).promise.then(resolve, resolve);
        return (reply) => registry.accept(reply as DriverMessage);
      },
      answer(content) {
        const reply = decodeBody(content);
        return { msgId: reply._msg_id, result: reply };
      },
    };
  };

  /** Rung 5's server: the endpoint method by name and version, in a `try`, its outcome awaited. */
  const endpoint: Readonly<Record<string, ((ctx: unknown, args: unknown) => unknown) | undefined>> = { echo: (_ctx, args) => args, sink: () => undefined };
  const dispatched: Serve = async (request) => {
    const { method, version } = request.request;
    const fn = versionIsCompatible('1.0', version) ? endpoint[method] : undefined;
    let reply: RpcReply;
    try {
      if (fn === undefined) throw new Error(`no method ${method}`);
      reply = { result: await fn(request.ctx, request.request.args) };
    } catch (err) {
      reply = { failure: err };
    }
    return request.msgId === undefined ? undefined : replyTo(request, reply);
  };

  const client4 = registered();
  const client5 = registered();
  return [
    ['1 raw-oslo', OSLO_RPC],
    ['2 + wire checks', checked(echo)],
    ['3 + duplicate window, reply address', checked(windowed()(echo))],
    ['4 + call registry', checked(windowed()(echo), client4.waitFor, client4.answer)],
    ['5 + dispatch', checked(windowed()(dispatched), client5.waitFor, client5.answer)],
  ];
}

function badRung(n: string, count: number): never {
  throw new Error(`--rungs takes rung numbers from 1 to ${count}, separated by commas; received ${JSON.stringify(n)}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: 'rabbit://guest:guest@127.0.0.1:5672/' },
      scenario: { type: 'string', default: 'call-sequential' },
      count: { type: 'string', default: '5000' },
      rounds: { type: 'string', default: '9' },
      warmup: { type: 'string', default: '5000' },
      instructions: { type: 'boolean' },
      one: { type: 'string' },
      handshake: { type: 'boolean' },
      rungs: { type: 'string' },
    },
  });
  const scenario = values.scenario as ScenarioName;
  if (!SCENARIO_NAMES.includes(scenario)) throw new Error(`--scenario is one of ${SCENARIO_NAMES.join(', ')}; received ${JSON.stringify(values.scenario)}`);
  const { count, rounds, warmup } = ladderCounts(values);
  const measure = scenario === 'call-sequential' ? measureSequentialCalls : measureConcurrentCalls;
  const tidings = SCENARIOS.find((s) => s.name === scenario)!;
  const all: Array<[string, ScenarioFn]> = [
    ...rungs().map(([name, shape]): [string, ScenarioFn] => [name, (ctx) => withOsloRpc(ctx, ({ call }) => measure(ctx, call), shape)]),
    ['6 tidings', tidings.run],
  ];
  const sides = values.rungs === undefined ? all : values.rungs.split(',').map((n) => all[Number(n) - 1] ?? badRung(n, all.length));
  const url = values.url;
  const transportUrl = TransportURL.parse(url);
  const ctx = () => contextFor({ url, count, durationMs: null, warmup }, transportUrl);
  if (values.one !== undefined) {
    const side = sides[Number(values.one)];
    if (side === undefined) throw new Error(`--one is an index into the rungs run, 0 to ${sides.length - 1}`);
    await runRung(side[1], ctx(), values.handshake === true);
    return;
  }
  const fields = { scenario, count, warmup };
  if (values.instructions) {
    const args = ['--url', url, '--scenario', scenario, '--count', String(count), '--warmup', String(warmup), ...(values.rungs === undefined ? [] : ['--rungs', values.rungs])];
    await countLadder('amqp-contract-cost', fileURLToPath(import.meta.url), sides.map(([name]) => name), rounds, args, fields);
    return;
  }
  printLadder('amqp-contract-cost', 'calls', await runLadder(sides, rounds, 'calls', ctx), { ...fields, rounds });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}

// A small NestJS microservice served by ServerTidings, and a caller application using ClientTidings
// through ClientsModule: the fixtures of the tidings/nestjs tests. Decorators are NestJS' legacy
// ones (test/nestjs/tsconfig.json); injection names its tokens, as no design metadata is emitted.
import 'reflect-metadata';
import {
  Catch,
  Controller,
  Inject,
  Injectable,
  Module,
  ParseIntPipe,
  UseFilters,
  UseGuards,
  UseInterceptors,
  type CallHandler,
  type CanActivate,
  type DynamicModule,
  type ExecutionContext,
  type INestApplicationContext,
  type INestMicroservice,
  type NestInterceptor,
  type RpcExceptionFilter,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientsModule, Ctx, EventPattern, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { map, throwError, type Observable } from 'rxjs';
import { NotificationResult, type NotificationEventMetadata, type RpcMeta } from '../../src/index.js';
import { ClientTidings, ServerTidings, TidingsContext, type TidingsClientOptions, type TidingsServerOptions } from '../../src/nestjs/index.js';

/** What the handlers of one application saw. */
export interface Seen {
  app: string;
  handler: string;
  payload: unknown;
  ctx?: Record<string, unknown>;
  eventType?: string;
  publisherId?: string | null;
  priority?: string;
  redelivered?: boolean;
  batch?: number;
}

export const APP = 'APP';
export const SEEN = 'SEEN';

export class OutOfStock extends Error {
  override name = 'OutOfStock';
}

/** Maps the domain error to an RpcException with a code, as a NestJS application would. */
@Catch(OutOfStock)
export class OutOfStockFilter implements RpcExceptionFilter<OutOfStock> {
  catch(exception: OutOfStock): Observable<never> {
    return throwError(() => new RpcException({ code: 'OUT_OF_STOCK', message: exception.message }));
  }
}

/**
 * The RPC handlers the broker and Python tests share (`add` with the caller's user, `take` with
 * a domain error mapped by OutOfStockFilter): their controllers extend it, NestJS finds inherited
 * handlers.
 */
export abstract class ShopRpc {
  @MessagePattern('add')
  add(@Payload() { a, b }: { a: number; b: number }, @Ctx() ctx: TidingsContext) {
    return { sum: a + b, user: ctx.getContext().user_id };
  }

  @MessagePattern('take')
  @UseFilters(OutOfStockFilter)
  take(@Payload('qty') qty: number) {
    if (qty > 3) throw new OutOfStock(`only 3 left, ${qty} asked`);
    return qty;
  }
}

/** Lets every error through as itself (so callers get its class), instead of "Internal server error". */
@Catch()
export class PassThroughFilter implements RpcExceptionFilter {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}

/** Admits requests whose tidings context carries the right token. */
@Injectable()
export class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const ctx = context.switchToRpc().getContext<TidingsContext>();
    return ctx.getContext().auth_token === 'let-me-in';
  }
}

/** Wraps a handler's result, as interceptors do. */
@Injectable()
export class WrapInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(map((value) => ({ wrapped: value })));
  }
}

const parseQty = new ParseIntPipe({ exceptionFactory: (message) => new RpcException({ code: 'BAD_QTY', message }) });

@Controller()
export class CalcController {
  constructor(
    @Inject(APP) private readonly app: string,
    @Inject(SEEN) private readonly seen: Seen[],
  ) {}

  @MessagePattern('add')
  add(@Payload() args: { a: number; b: number }, @Ctx() ctx: TidingsContext<RpcMeta>) {
    this.seen.push({ app: this.app, handler: 'add', payload: args, ctx: ctx.getContext() });
    return { sum: args.a + args.b, method: ctx.getMetadata().method, version: ctx.getMetadata().version, user: ctx.getContext().user_id ?? null, app: this.app };
  }

  @MessagePattern('multiply', { namespace: 'calc', version: '1.2' })
  multiply(@Payload('a') a: number, @Payload('b') b: number) {
    return a * b;
  }

  @MessagePattern('stock.take')
  @UseFilters(OutOfStockFilter)
  take(@Payload('qty', parseQty) qty: number) {
    if (qty > 3) throw new OutOfStock(`only 3 left, ${qty} asked`);
    return { taken: qty, type: typeof qty };
  }

  @MessagePattern('explode')
  explode(): never {
    throw new Error('secret internal detail');
  }

  @MessagePattern('range')
  @UseFilters(PassThroughFilter)
  range(@Payload('n') n: number): number {
    if (n < 0) throw new RangeError(`n must be >= 0, got ${n}`);
    return n;
  }

  @MessagePattern('whoami')
  @UseGuards(TokenGuard)
  whoami(@Ctx() ctx: TidingsContext<RpcMeta>) {
    return ctx.getContext().user_id;
  }

  @MessagePattern('wrapped')
  @UseInterceptors(WrapInterceptor)
  wrapped(@Payload('value') value: unknown) {
    return value;
  }

  @MessagePattern('slow')
  async slow(@Payload('ms') ms: number) {
    await new Promise((r) => setTimeout(r, ms));
    return ms;
  }

  /** An object pattern: its JSON text is the method name (only NestJS callers send that). */
  @MessagePattern({ cmd: 'sum', v: 2 })
  sum(@Payload('values') values: number[]) {
    return values.reduce((a, b) => a + b, 0);
  }

  @MessagePattern('record')
  record(@Payload() args: unknown, @Ctx() ctx: TidingsContext<RpcMeta>) {
    this.seen.push({ app: this.app, handler: 'record', payload: args, ctx: ctx.getContext() });
  }
}

@Controller()
export class EventsController {
  constructor(
    @Inject(APP) private readonly app: string,
    @Inject(SEEN) private readonly seen: Seen[],
  ) {}

  private note(handler: string, payload: unknown, ctx: TidingsContext<NotificationEventMetadata>, extra: Partial<Seen> = {}): void {
    this.seen.push({
      app: this.app,
      handler,
      payload,
      ctx: ctx.getContext(),
      eventType: ctx.getEventType(),
      publisherId: ctx.getPublisherId(),
      priority: ctx.getPriority(),
      redelivered: ctx.getMetadata().redelivered,
      ...extra,
    });
  }

  @EventPattern('compute.instance.create.end', { pool: 'billing' })
  billing(@Payload() payload: unknown, @Ctx() ctx: TidingsContext<NotificationEventMetadata>) {
    this.note('billing', payload, ctx);
  }

  /** The same pattern as billing, in another pool: NestJS chains the two, tidings routes each on its own. */
  @EventPattern('compute.instance.create.end', { pool: 'quota' })
  quota(@Payload() payload: unknown, @Ctx() ctx: TidingsContext<NotificationEventMetadata>) {
    this.note('quota', payload, ctx);
  }

  @EventPattern('compute.instance.*', { pool: 'audit', priorities: ['info', 'warn'] })
  audit(@Payload() payload: unknown, @Ctx() ctx: TidingsContext<NotificationEventMetadata>) {
    this.note('audit', payload, ctx);
  }

  /** Fails the first delivery of each order (in whichever application): with allowRequeue the broker delivers it again. */
  @EventPattern('order.placed', { pool: 'orders', allowRequeue: true })
  order(@Payload() payload: { id: number }, @Ctx() ctx: TidingsContext<NotificationEventMetadata>) {
    this.note('order', payload, ctx);
    if (!ctx.getMetadata().redelivered) throw new Error(`order ${payload.id} not ready`);
  }

  /** Asks for a redelivery by its result rather than by throwing. */
  @EventPattern('payment.*', { pool: 'payments', allowRequeue: true })
  payment(@Payload() payload: { id: number }, @Ctx() ctx: TidingsContext<NotificationEventMetadata>) {
    this.note('payment', payload, ctx);
    return ctx.getMetadata().redelivered ? NotificationResult.HANDLED : NotificationResult.REQUEUE;
  }

  @EventPattern('meter.*', { pool: 'meter', priorities: ['sample'], batch: { size: 4, timeout: 300 } })
  meter(@Payload() payloads: unknown[], @Ctx() ctx: TidingsContext<NotificationEventMetadata>) {
    this.note('meter', payloads, ctx, { batch: ctx.getBatch()?.length });
  }
}

/** The microservice: the two controllers, its name and the list its handlers write to. */
@Module({})
export class AppModule {
  static with(app: string, seen: Seen[]): DynamicModule {
    return {
      module: AppModule,
      controllers: [CalcController, EventsController],
      providers: [
        { provide: APP, useValue: app },
        { provide: SEEN, useValue: seen },
        TokenGuard,
        WrapInterceptor,
      ],
    };
  }
}

/** Starts the microservice on ServerTidings. */
export async function startMicroservice(app: string, seen: Seen[], options: TidingsServerOptions): Promise<INestMicroservice> {
  const service = await NestFactory.createMicroservice(AppModule.with(app, seen), { strategy: new ServerTidings(options), logger: false });
  await service.listen();
  return service;
}

export const CALC = 'CALC';
export const CALC_CAST = 'CALC_CAST';

/** A caller application: ClientTidings registered through ClientsModule, as NestJS' own clients. */
@Module({})
export class CallerModule {
  static with(options: TidingsClientOptions): DynamicModule {
    return {
      module: CallerModule,
      imports: [
        ClientsModule.register([
          { name: CALC, customClass: ClientTidings, options },
          { name: CALC_CAST, customClass: ClientTidings, options: { ...options, emitAs: 'cast' } },
        ]),
      ],
    };
  }
}

export async function startCaller(options: TidingsClientOptions): Promise<INestApplicationContext> {
  return NestFactory.createApplicationContext(CallerModule.with(options), { logger: false });
}

// The RPC façade: client, server, dispatcher, access policies and endpoint types, as the package
// exports them (src/index.ts re-exports all of it).
export { getRpcClient, RpcClient, waitForServers } from './client.js';
export { RPC_CLIENT_DEFAULTS, type RpcClientOptions, type RpcPrepareOptions, type RpcCallOptions, type RpcCastOptions } from './client-options.js';
export { isUnansweredCall, type RpcClientEvents, type RpcRetryInfo, type RpcBulkheadFullInfo } from './resilience.js';
export { RPC_CIRCUIT_BREAKER_DEFAULTS, type RpcCircuitBreakerOptions, type CircuitTransition } from './circuit-breaker.js';
export { RPC_BULKHEAD_DEFAULTS, type RpcBulkheadOptions, type RpcBulkheadState } from './bulkhead.js';
export {
  RPC_WAIT_FOR_SERVERS_DEFAULTS,
  RPC_WATCH_SERVERS_DEFAULTS,
  type RpcWaitForServersOptions,
  type RpcWatchServersOptions,
  type ServerWatch,
  type ServerWatchEvents,
} from './server-watch.js';
export { getRpcServer, RpcServer, RPC_SERVER_DEFAULTS, type RpcServerOptions, type RpcServerEvents, type RpcDispatchInfo, type RpcHandlerTimeoutInfo } from './server.js';
export { RPC_DISCOVER_DEFAULTS, type RpcPingOptions, type RpcDiscoverOptions, type DiscoveredServer } from './discovery.js';
export { RpcDispatcher, type RpcDispatcherOptions, type DispatchOutcome } from './dispatcher.js';
export {
  DefaultRpcAccessPolicy,
  LegacyRpcAccessPolicy,
  ExplicitRpcAccessPolicy,
  expose,
  type RpcAccessPolicy,
} from './access-policy.js';
export {
  expectedExceptions,
  type RpcMeta,
  type EndpointMethod,
  type UntypedApi,
  type RpcMethodName,
  type RpcArgs,
  type RpcResult,
  type SchemaTypedApi,
  type ErrorClass,
} from './endpoint.js';
export { RPC_CHANNELS, type RpcTraceContext } from './instrumentation.js';
export {
  defineRpcContract,
  implementContract,
  isRpcContract,
  type RpcContract,
  type RpcContractMethods,
  type RpcMethodSchemas,
  type RpcContractApi,
  type RpcContractHandlers,
  type RpcContractEndpoint,
  type ImplementContractOptions,
} from './contract.js';

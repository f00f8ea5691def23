// The RPC façade: client, server, dispatcher, access policies and endpoint types, as the package
// exports them (src/index.ts re-exports all of it).
export { getRpcClient, RpcClient, RPC_CLIENT_DEFAULTS, type RpcClientOptions, type RpcPrepareOptions, type RpcCallOptions, type RpcCastOptions } from './client.js';
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

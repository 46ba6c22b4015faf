/**
 * `tollgate/testing`: a loopback OpenID provider for testing routes protected by tollgate.
 *
 * @module
 */

export type {
  DevAccessTokenOptions,
  DevClient,
  DevClientAuth,
  DevExchangePolicy,
  DevGrantType,
  DevProvider,
  DevProviderOptions,
  DevResource,
  DevUser,
} from './dev-provider.js'
export { createDevProvider } from './dev-provider.js'
export type { DpopProofOptions, TestDpopKey } from './dpop.js'
export { createDpopKey } from './dpop.js'
export type { TestIssuerFault } from './faults.js'
export type { MintOptions, SetFaultOptions, TestIssuer, TestPrivateKey } from './issuer.js'
export { createTestIssuer } from './issuer.js'
export type { TestAlgorithm } from './keys.js'
export { TEST_ALGORITHMS } from './keys.js'
export type { TestClient, TestIssuerOptions, TestPathIssuer } from './options.js'
export type { FaultEndpoint } from './realm.js'
export type {
  TestSet,
  TestSetOverrides,
  TestTransmitter,
  TestTransmitterDelivery,
  TestTransmitterOptions,
} from './ssf-transmitter.js'
export { createTestTransmitter, SSF_EVENTS } from './ssf-transmitter.js'
export type { TestStatusList, TestStatusListOptions } from './status-lists.js'

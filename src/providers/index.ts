/**
 * Provider profiles: the issuer entries and claim layout of the identity providers people run.
 * `keycloak()`, the specification's provider, stays in `token/issuers.ts`.
 *
 * @module
 */
export { type Auth0Options, auth0 } from './auth0.js'
export { type CognitoOptions, cognito } from './cognito.js'
export { type EntraOptions, entra } from './entra.js'
export { type OktaOptions, okta } from './okta.js'

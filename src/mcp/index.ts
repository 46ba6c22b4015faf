/**
 * MCP endpoints, operation by operation: the core of the adapters' `mcpGate` (per-tool, resource
 * and prompt scopes; `Mcp-Method` / `Mcp-Name` checked against the body; windows per tool).
 *
 * @module
 */
export { renderMcpError } from './answer.js'
export { decodeMcpName, type McpOperation } from './operation.js'
export {
  createMcpPolicy,
  type McpAuthorized,
  type McpPolicy,
  type McpPolicyOptions,
  type McpRateLimitOptions,
  type McpResourceRule,
  type McpRule,
  type McpToolRule,
} from './policy.js'

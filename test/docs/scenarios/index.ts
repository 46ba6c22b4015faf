/** Every scenario of the samples runner, by Markdown file and heading (test/docs/scenario.ts). */
import type { ScenarioTable } from '../scenario.js'
import { CLIENTS } from './clients.js'
import { FRAMEWORKS } from './frameworks.js'
import { GATEWAY } from './gateway.js'
import { INTROSPECTION } from './introspection.js'
import { MCP } from './mcp.js'
import { MTLS } from './mtls.js'
import { NESTJS } from './nestjs.js'
import { OPERATING } from './operating.js'
import { PROVIDERS } from './providers.js'
import { README } from './readme.js'
import { RUNTIMES } from './runtimes.js'
import { SIGN_IN } from './sign-in.js'
import { SIGNALS } from './signals.js'
import { STATUS_LIST } from './status-list.js'
import { STEP_UP } from './step-up.js'
import { STORES } from './stores.js'
import { TOKEN_EXCHANGE } from './token-exchange.js'

export const SCENARIOS: ScenarioTable = {
  ...README,
  ...PROVIDERS,
  ...INTROSPECTION,
  'docs/keycloak.md': {
    ...PROVIDERS['docs/keycloak.md'],
    ...INTROSPECTION['docs/keycloak.md'],
  },
  ...FRAMEWORKS,
  ...GATEWAY,
  ...CLIENTS,
  ...SIGN_IN,
  ...STEP_UP,
  ...OPERATING,
  ...STORES,
  ...RUNTIMES,
  ...NESTJS,
  ...MTLS,
  ...TOKEN_EXCHANGE,
  ...SIGNALS,
  ...STATUS_LIST,
  ...MCP,
}

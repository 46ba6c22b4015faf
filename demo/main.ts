/**
 * `npm start`: the demo platform on loopback with ready-to-paste curl lines. Ports default to
 * 7400 (identity provider), 7401 (gateway), 7402 (office) and 7403 (sign-in provider); set
 * DEMO_ISSUER_PORT, DEMO_GATEWAY_PORT, DEMO_OFFICE_PORT or DEMO_SIGNIN_PORT to change them (0: any
 * free port). A taken port stops the
 * demo with one line naming the variable that moves it.
 *
 * It stops, its ports freed, on SIGINT, SIGTERM or SIGHUP, and when the process that started it
 * ends: `npm start` execs this process in place of its shell, so npm's forwarded SIGINT and
 * SIGTERM reach it, and an npm ended otherwise (SIGHUP, which npm does not forward, or SIGKILL)
 * leaves it with another parent, which it notices within half a second.
 */
import { bannerOf } from './banner.js'
import { type Demo, type DemoPorts, PortInUseError, startDemo } from './servers.js'

const PORT_VARIABLES: Record<keyof DemoPorts, string> = {
  issuer: 'DEMO_ISSUER_PORT',
  gateway: 'DEMO_GATEWAY_PORT',
  office: 'DEMO_OFFICE_PORT',
  signIn: 'DEMO_SIGNIN_PORT',
}

function port(name: string, fallback: number): number {
  const value = process.env[name]
  if (value === undefined || value === '') return fallback
  const parsed = Number(value)
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65_535) {
    console.error(
      `demo: ${name} must be a port number from 0 to 65535 (got ${JSON.stringify(value)})`,
    )
    process.exit(1)
  }
  return parsed
}

let demo: Demo
try {
  demo = await startDemo({
    issuer: port(PORT_VARIABLES.issuer, 7400),
    gateway: port(PORT_VARIABLES.gateway, 7401),
    office: port(PORT_VARIABLES.office, 7402),
    signIn: port(PORT_VARIABLES.signIn, 7403),
  })
} catch (error) {
  if (!(error instanceof PortInUseError)) throw error
  const variable = PORT_VARIABLES[error.service]
  console.error(
    `demo: port ${error.port} (${error.service}) is in use; set ${variable} to another port, or ${variable}=0 for any free one`,
  )
  process.exit(1)
}
console.log(await bannerOf(demo))

/** How long closing may take before the demo exits all the same. */
const CLOSE_DEADLINE_MS = 5000
let stopping = false
const stop = () => {
  // A second signal while closing: leave at once.
  if (stopping) process.exit(1)
  stopping = true
  setTimeout(() => process.exit(1), CLOSE_DEADLINE_MS).unref()
  demo.close().then(
    () => process.exit(0),
    () => process.exit(1),
  )
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stop)
// The parent ended without a signal for us (npm killed by SIGHUP or SIGKILL): we were adopted.
const parent = process.ppid
setInterval(() => {
  if (!stopping && process.ppid !== parent) stop()
}, 500).unref()

import type { AddressInfo, Server } from 'node:net'
import { connect } from 'node:net'

/** Sends exactly these header lines (supertest cannot repeat a header) and returns the status code. */
export async function rawRequest(
  server: Server,
  lines: string[],
): Promise<{ status: number; raw: string }> {
  if (!server.listening)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let raw = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      raw += chunk
    })
    socket.on('error', reject)
    socket.on('close', () => resolve({ status: Number(raw.slice(9, 12)), raw }))
    socket.write(`${[...lines, 'Host: 127.0.0.1', 'Connection: close'].join('\r\n')}\r\n\r\n`)
  })
}

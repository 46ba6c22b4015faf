/**
 * Host of a NestJS sample: calls its exported `bootstrap(port)` with `PORT`, or else builds its
 * exported `AppModule` as a bootstrap does (`NestFactory.create(AppModule)`, Express platform)
 * and listens on `PORT`.
 */
import { pathToFileURL } from 'node:url'

import { NestFactory } from '@nestjs/core'

const sample = (await import(pathToFileURL(process.env['SAMPLE_MODULE'] ?? '').href)) as {
  bootstrap?: (port: number) => Promise<unknown>
  AppModule?: new () => unknown
}
const port = Number(process.env['PORT'])
if (sample.bootstrap !== undefined) {
  await sample.bootstrap(port)
} else if (sample.AppModule !== undefined) {
  const app = await NestFactory.create(sample.AppModule, { logger: ['error'] })
  await app.listen(port, '127.0.0.1')
} else {
  throw new TypeError('the sample exports neither bootstrap nor AppModule')
}

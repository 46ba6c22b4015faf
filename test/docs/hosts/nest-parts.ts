/**
 * Host of a NestJS sample that is one part of an application: a controller (`ReadyController`)
 * or an exception filter (`AuthErrorFilter`). Builds the application its guide describes around
 * it, on the Express platform, at `PORT`: `TollgateModule.forRoot()` for Keycloak realm `acme` at
 * `KEYCLOAK_URL`, audience `gateway`, and a guarded controller `GET /invoices` answering
 * `{ ok: true }`. With the filter, the gate's `errorHandling` is `'framework'` and the filter is
 * registered with `app.useGlobalFilters()`, as the guide says; a controller is added to the
 * module's controllers.
 */
import { pathToFileURL } from 'node:url'

import { Controller, type ExceptionFilter, Get, Module } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { keycloak, TollgateModule } from 'tollgate/nestjs'

const sample = (await import(pathToFileURL(process.env['SAMPLE_MODULE'] ?? '').href)) as {
  ReadyController?: new (...args: never[]) => unknown
  AuthErrorFilter?: new () => ExceptionFilter
}

@Controller('invoices')
class InvoicesController {
  @Get()
  list() {
    return { ok: true }
  }
}

const filter = sample.AuthErrorFilter
@Module({
  imports: [
    TollgateModule.forRoot({
      issuers: keycloak({ authUrl: process.env['KEYCLOAK_URL'] ?? '', realms: ['acme'] }),
      audience: 'gateway',
      ...(filter === undefined ? {} : { errorHandling: 'framework' as const }),
    }),
  ],
  controllers: [
    InvoicesController,
    ...(sample.ReadyController === undefined ? [] : [sample.ReadyController]),
  ],
})
class AppModule {}

const app = await NestFactory.create(AppModule, { logger: ['error'] })
if (filter !== undefined) app.useGlobalFilters(new filter())
await app.listen(Number(process.env['PORT']), '127.0.0.1')

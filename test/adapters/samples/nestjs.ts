import { Controller, Get, Module } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import {
  type Admission,
  Auth,
  keycloak,
  Public,
  RequireScopes,
  TollgateModule,
} from 'tollgate/nestjs'

@Controller('invoices')
export class InvoicesController {
  // Admitted by the guard (valid token, within its tenant's limit), then checked for the scope.
  @Get()
  @RequireScopes('billing:read')
  list(@Auth() auth: Admission) {
    return { subject: auth.subject, scopes: auth.scopes }
  }
}

@Controller('health')
export class HealthController {
  // No token read, no point spent: load balancers call this.
  @Public()
  @Get()
  health() {
    return { ok: true }
  }
}

@Module({
  imports: [
    TollgateModule.forRoot({
      issuers: keycloak({
        authUrl: process.env.KEYCLOAK_URL ?? 'http://localhost:8080',
        realms: ['acme'],
      }),
      audience: 'gateway',
    }),
  ],
  controllers: [InvoicesController, HealthController],
})
export class AppModule {}

export async function bootstrap(port = 3000) {
  const app = await NestFactory.create(AppModule)
  await app.listen(port)
  return app
}

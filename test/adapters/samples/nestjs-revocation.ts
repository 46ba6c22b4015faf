import { Controller, Get, Module } from '@nestjs/common'
import { type Admission, Auth, keycloak, TollgateModule } from 'tollgate/nestjs'

@Controller('invoices')
export class InvoicesController {
  @Get()
  list(@Auth() auth: Admission) {
    return { subject: auth.subject }
  }
}

@Module({
  imports: [
    TollgateModule.forRoot(
      {
        issuers: keycloak({
          authUrl: process.env.KEYCLOAK_URL ?? 'http://localhost:8080',
          realms: ['acme'],
        }),
        audience: 'gateway',
        revocation: {
          // The gateway's client id at the provider: logout tokens and pushes are for it.
          callbacks: { clientIds: 'gateway' },
          // store: { redis } to share the revocations between instances (operating.md).
        },
      },
      {
        callbacks: {
          backchannelLogout: '/backchannel-logout',
          keycloakPushNotBefore: '/keycloak/k_push_not_before',
        },
      },
    ),
  ],
  controllers: [InvoicesController],
})
export class AppModule {}

import { Controller, Get, Module } from '@nestjs/common'
import { type Admission, Auth, keycloak, RequireScopes, TollgateModule } from 'tollgate/nestjs'

const RESOURCE = 'https://api.example.com/mcp'

@Controller('mcp')
export class McpController {
  @Get()
  @RequireScopes('mcp:tools')
  tools(@Auth() auth: Admission) {
    return { subject: auth.subject, tools: [] }
  }
}

@Module({
  imports: [
    TollgateModule.forRoot({
      issuers: keycloak({
        authUrl: process.env.KEYCLOAK_URL ?? 'http://localhost:8080',
        realms: ['acme'],
      }),
      // Tokens must name this resource (RFC 8707), as the document tells clients.
      audience: RESOURCE,
      resourceMetadata: { resource: RESOURCE, scopesSupported: ['mcp:tools'] },
    }),
  ],
  controllers: [McpController],
})
export class AppModule {}

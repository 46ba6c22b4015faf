/** Bare Fastify 5: no authentication at all, the baseline the Fastify contenders are divided by. */
import { SAMPLE_SUBJECT } from '../protocol.ts'
import { serve } from './common.ts'
import { fastifyServer } from './fastify-app.ts'

await serve(() => fastifyServer(undefined, () => SAMPLE_SUBJECT))

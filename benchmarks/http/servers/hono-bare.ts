/** Bare Hono on Node: no authentication at all, the baseline the Hono contenders are divided by. */
import { SAMPLE_SUBJECT } from '../protocol.ts'
import { serve } from './common.ts'
import { honoServer } from './hono-app.ts'

await serve(() => honoServer(undefined, () => SAMPLE_SUBJECT))

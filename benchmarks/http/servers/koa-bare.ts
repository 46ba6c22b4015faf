/** Bare Koa 3: no authentication at all, the baseline the Koa contenders are divided by. */
import { SAMPLE_SUBJECT } from '../protocol.ts'
import { serve } from './common.ts'
import { koaServer } from './koa-app.ts'

await serve(() => koaServer(undefined, () => SAMPLE_SUBJECT))

/** Bare Express 5: no authentication at all, the baseline the Express contenders are divided by. */
import { SAMPLE_SUBJECT } from '../protocol.ts'
import { serve } from './common.ts'
import { expressServer } from './express-app.ts'

await serve(() => expressServer(undefined, () => SAMPLE_SUBJECT))

/**
 * The Express 5 app every Express contender shares: one JSON route after the contender's auth
 * middleware, and an error handler that answers with the error's status (401 for refusals), as
 * the competitors' READMEs recommend.
 */
import { createServer } from 'node:http'
import express, { type ErrorRequestHandler, type Request, type RequestHandler } from 'express'

export function expressServer(
  auth: RequestHandler | undefined,
  subject: (req: Request) => unknown,
) {
  const app = express()
  app.disable('x-powered-by')
  app.disable('etag')
  if (auth) app.use(auth)
  app.get('/hello', (req, res) => {
    res.json({ ok: true, sub: subject(req) })
  })
  const onError: ErrorRequestHandler = (
    error: { status?: number; statusCode?: number },
    _req,
    res,
    _next,
  ) => {
    res.status(error.status ?? error.statusCode ?? 500).json({ ok: false })
  }
  app.use(onError)
  return createServer(app)
}

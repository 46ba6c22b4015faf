/**
 * Host of a sample that only builds something (an options object, a client): imports it, so
 * that its code runs as printed, and ends with 0 once it did; a throw ends it with 1.
 */
import { pathToFileURL } from 'node:url'

await import(pathToFileURL(process.env['SAMPLE_MODULE'] ?? '').href)
process.exit(0)

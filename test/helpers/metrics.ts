/**
 * Reading OpenTelemetry metrics in tests: a reader that collects on demand (as a Prometheus scrape
 * would) and the data points of one instrument.
 */
import { MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics'

/** Collects on demand, as a Prometheus scrape would. */
export class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

export interface Point {
  readonly attributes: Record<string, unknown>
  readonly value: unknown
}

/** The data points of the instrument called `name`, empty when it recorded nothing. */
export function points(collected: ResourceMetrics, name: string): Point[] {
  const found = collected.scopeMetrics
    .flatMap((scope) => scope.metrics)
    .find((metric) => metric.descriptor.name === name)
  return (found?.dataPoints ?? []).map((point) => ({
    attributes: point.attributes,
    value: point.value,
  }))
}

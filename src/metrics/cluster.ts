import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * In a worker of `serve --workers N`: answers its primary's requests for this registry's metrics
 * (prom-client's cluster messages), so that the primary's scrape sees the whole instance. A worker
 * serves no metrics port itself: on a shared port a scrape would reach one worker at random.
 */
export function shareMetricsWithPrimary(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs the worker's message listener.
  new AggregatorRegistry();
}

/** In the primary: the sum of every worker's metrics (by each metric's aggregator), as Prometheus text. */
export function clusterMetrics(): () => Promise<string> {
  const aggregator = new AggregatorRegistry();
  return () => aggregator.clusterMetrics();
}

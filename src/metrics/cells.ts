import { Counter, Histogram, type HistogramConfiguration, type Registry } from 'prom-client';

type MetricObjectWithValues = Awaited<ReturnType<Histogram['get']>>;

/**
 * Metrics counted in plain numbers and handed to prom-client only when scraped.
 *
 * Why: prom-client's labelled children build a label object and a hash string on every inc and
 * observe; the fast lane's GET runs at the speed of bare node:http, where that shows. Here each
 * label set gets its cell once (the slow path), and a request only adds to numbers in it.
 */

/** One counter of one label set: the hot path adds to `value`, nothing else. */
export interface CounterCell {
  value: number;
}

/** One histogram of one label set: a count per bucket (not cumulative; the last is +Inf), the sum and the count. */
export class HistogramCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

type Labels<L extends string> = Readonly<Record<L, string>>;

/** Cells by label set, made once each; `cell` is the slow path, call it at start or once per new label set. */
class Cells<L extends string, C> {
  readonly #byKey = new Map<string, { labels: Labels<L>; cell: C }>();

  constructor(
    readonly labelNames: readonly L[],
    readonly make: () => C,
  ) {}

  cell(labels: Labels<L>): C {
    const key = this.labelNames.map((name) => labels[name]).join('\u0000');
    let entry = this.#byKey.get(key);
    if (!entry) {
      entry = { labels: { ...labels }, cell: this.make() };
      this.#byKey.set(key, entry);
    }
    return entry.cell;
  }

  entries(): Iterable<{ labels: Labels<L>; cell: C }> {
    return this.#byKey.values();
  }
}

export interface CellMetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registry: Registry;
  /** How the cluster aggregate combines the workers' values (default sum). */
  aggregator?: 'sum' | 'max';
}

/** A prom-client counter whose values are read from cells when scraped. */
export class CellCounter<L extends string> {
  readonly #cells: Cells<L, CounterCell>;

  constructor(options: CellMetricOptions<L>) {
    const cells = new Cells<L, CounterCell>(options.labelNames, () => ({ value: 0 }));
    this.#cells = cells;
    new Counter<L>({
      name: options.name,
      help: options.help,
      labelNames: options.labelNames,
      registers: [options.registry],
      ...(options.aggregator && { aggregator: options.aggregator }),
      collect() {
        this.reset();
        for (const { labels, cell } of cells.entries()) this.inc(labels, cell.value);
      },
    });
  }

  cell(labels: Labels<L>): CounterCell {
    return this.#cells.cell(labels);
  }
}

/** A prom-client histogram whose values are read from cells when scraped. */
export class CellHistogram<L extends string> {
  readonly #cells: Cells<L, HistogramCell>;

  constructor(options: CellMetricOptions<L> & { buckets: readonly number[] }) {
    const cells = new Cells<L, HistogramCell>(options.labelNames, () => new HistogramCell(options.buckets));
    this.#cells = cells;
    const exported = (): ExportedValue[] => {
      const values: ExportedValue[] = [];
      for (const { labels, cell } of cells.entries()) {
        let cumulative = 0;
        cell.bounds.forEach((bound, i) => {
          cumulative += cell.counts[i]!;
          values.push({ metricName: `${options.name}_bucket`, labels: { ...labels, le: bound }, value: cumulative });
        });
        values.push({ metricName: `${options.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: cell.count });
        values.push({ metricName: `${options.name}_sum`, labels: { ...labels }, value: cell.sum });
        values.push({ metricName: `${options.name}_count`, labels: { ...labels }, value: cell.count });
      }
      return values;
    };
    new ExportedHistogram({ name: options.name, help: options.help, labelNames: options.labelNames, registers: [options.registry] }, exported);
  }

  cell(labels: Labels<L>): HistogramCell {
    return this.#cells.cell(labels);
  }
}

interface ExportedValue {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * A prom-client Histogram that reports the given values: a registry reads a histogram through
 * get() (JSON, and the cluster aggregate) and getForPromString() (text), and both are replaced.
 */
class ExportedHistogram extends Histogram {
  readonly #values: () => ExportedValue[];
  readonly #configuration: HistogramConfiguration<string>;

  constructor(configuration: HistogramConfiguration<string>, values: () => ExportedValue[]) {
    super(configuration);
    this.#configuration = configuration;
    this.#values = values;
  }

  override async get(): ReturnType<Histogram['get']> {
    const { name, help } = this.#configuration;
    // prom-client's own histograms say 'histogram' here (its typings declare a numeric enum).
    const type = 'histogram' as unknown as MetricObjectWithValues['type'];
    return { name, help, type, aggregator: 'sum', collect: () => undefined, values: this.#values() };
  }

  /** What the registry's text output reads (prom-client calls it when present). */
  async getForPromString(): ReturnType<Histogram['get']> {
    return this.get();
  }
}

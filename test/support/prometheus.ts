/** The value of one sample of the Prometheus text, or undefined when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = match[2] ? match[2].split(/,(?=[a-zA-Z_]\w*=")/) : [];
    if (wanted.every((w) => have.includes(w)) && have.length === wanted.length) return Number(match[3]);
  }
  return undefined;
}

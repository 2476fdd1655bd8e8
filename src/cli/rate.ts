/** "2.41 s (414,938 rows/s)": how long something took, and how many of `unit` per second that was. */
export function formatRate(count: number, seconds: number, unit: string): string {
  const rate = seconds > 0 ? Math.round(count / seconds).toLocaleString('en-US') : '-';
  return `${seconds.toFixed(2)} s (${rate} ${unit}/s)`;
}

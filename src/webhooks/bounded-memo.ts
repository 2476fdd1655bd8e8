/**
 * `make(key)` remembered by key, for values that cost something to make on every delivery (a
 * parsed URL, a decoded secret). At most `max` kept: past that it starts afresh, which only costs
 * making them again; `max` is set far above the endpoints of any instance.
 */
export function boundedMemo<K, V>(max: number, make: (key: K) => V): (key: K) => V {
  const made = new Map<K, V>();
  return (key) => {
    let value = made.get(key);
    if (value === undefined) {
      value = make(key);
      if (made.size >= max) made.clear();
      made.set(key, value);
    }
    return value;
  };
}

/**
 * A value made at its first use (a file read and compressed, a page built from it) and kept for
 * the life of the process. A failed attempt is not kept: the next use tries again.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    if (!loaded) {
      loaded = load();
      loaded.catch(() => (loaded = undefined));
    }
    return loaded;
  };
}

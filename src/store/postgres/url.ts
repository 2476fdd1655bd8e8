/**
 * Why a PostgreSQL URL cannot be used as given, or undefined: its options= would reach the server as
 * a startup parameter, which a transaction-mode pooler refuses, and outlive the transactions that
 * set the store's own settings (decisions 5.13).
 */
export function postgresUrlProblem(url: string): string | undefined {
  return /[?&]options=/.test(url) ? 'must not set options=: the store sets its settings in every transaction itself' : undefined;
}

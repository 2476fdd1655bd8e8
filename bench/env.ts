/** A setting a bench child process cannot run without; the harness always passes it. */
export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} must be set (the bench harness passes it)`);
  return value;
}

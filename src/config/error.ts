/** A setting that cannot be used; the message names the variable and what it accepts. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

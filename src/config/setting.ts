/** What one setting's text may be, and the value it becomes. */
export interface SettingValue<T> {
  /** The value when the variable is unset or blank. */
  readonly default: T;
  /** What a value must be, in the words of its error message after "must be": "a whole number from 0 to 65535". */
  readonly accepts: string;
  /** The default as its text, where that reads better than the value (a list of waits: 5s,5m rather than ms). */
  readonly defaultText?: string;
  /** Smallest and largest number it accepts, where it is a number: the tests try one beyond each. */
  readonly bounds?: { readonly min: number; readonly max: number };
  /** The value of `text` (set, not blank, trimmed by loadConfig); throws ConfigError naming `name`. */
  parse(name: string, text: string): T;
}

/** What a setting's value may be: text, a number, a flag, a list, or none (unset). */
export type SettingData = string | number | boolean | readonly string[] | readonly number[] | undefined;

/** One row of the settings table: everything the loader, `serve --help` and docs/settings.md say of it. */
export interface Setting<T extends SettingData = SettingData> {
  /** The member of Config it fills; none for a setting that only `serve` reads (WORKERS). */
  readonly key?: string;
  /** What its text may be, its default and bounds. */
  readonly value: SettingValue<T>;
  /** What it does, in one line of the docs table; `serve --help` prints it too when it has a flag. */
  readonly doc: string;
  /** The `serve` flag that overrides it, and the placeholder its help shows for the value. */
  readonly flag?: { readonly name: string; readonly placeholder: string };
  /** A value worth copying, shown in the docs table (a test loads it). */
  readonly example?: string;
}
